// Synthesis twin of rtl/nibble_adder_tree.sv for Yosys 0.23, which reads neither unpacked
// array ports nor a packed array per generate level referenced as gen_level[l-1].sums.
// Same function and the same hardware: a balanced binary tree of Lanes - 1 adders, level l
// (1..Levels) holding Lanes >> l sums of InWidth + l bits, each the sign-extended sum of two
// sums of the level below. Lane i of operands_i is bits [i*InWidth +: InWidth] (how the
// flattened `prods` of nibble_dpu_core is laid out by sv_compat.py). tests/synth checks this
// file's arithmetic against the original by simulation (tests/synth/adder_tree_equiv).
module nibble_adder_tree #(
  parameter int unsigned Lanes   = 16,
  parameter int unsigned InWidth = 12,
  localparam int unsigned Levels   = $clog2(Lanes),
  localparam int unsigned OutWidth = InWidth + Levels
) (
  input  logic [Lanes*InWidth-1:0]   operands_i,
  output logic signed [OutWidth-1:0] sum_o
);

  // Bit offset of level l in the flat bus t (levels 0..Levels stored one after another).
  function automatic integer level_offset(input integer l);
    integer j;
    level_offset = 0;
    for (j = 0; j < l; j = j + 1) level_offset = level_offset + (Lanes >> j) * (InWidth + j);
  endfunction

  localparam integer Total = level_offset(Levels + 1);

  logic [Total-1:0] t;

  assign t[Lanes*InWidth-1:0] = operands_i;

  for (genvar l = 1; l <= Levels; l++) begin : gen_level
    localparam integer Width = InWidth + l;
    localparam integer Count = Lanes >> l;
    localparam integer Here  = level_offset(l);
    localparam integer Below = level_offset(l - 1);
    for (genvar i = 0; i < Count; i++) begin : gen_adder
      wire signed [Width-2:0] x = t[Below + (2*i)   * (Width-1) +: (Width-1)];
      wire signed [Width-2:0] y = t[Below + (2*i+1) * (Width-1) +: (Width-1)];
      assign t[Here + i*Width +: Width] = Width'(x) + Width'(y);
    end
  end

  assign sum_o = t[level_offset(Levels) +: OutWidth];

endmodule
