// Exact sum of Lanes signed operands as a balanced binary tree: level l adds pairs of
// level l - 1 and is one bit wider, so no level can overflow. Lanes must be a power of two.
// Purely combinational.
module nibble_adder_tree #(
  parameter int unsigned Lanes   = 16,
  parameter int unsigned InWidth = 12,
  localparam int unsigned Levels   = $clog2(Lanes),
  localparam int unsigned OutWidth = InWidth + Levels
) (
  input  logic signed [InWidth-1:0]  operands_i [Lanes],
  output logic signed [OutWidth-1:0] sum_o
);

  for (genvar l = 0; l <= Levels; l++) begin : gen_level
    localparam int unsigned Width = InWidth + l;
    localparam int unsigned Count = Lanes >> l;
    logic signed [Width-1:0] sums [Count];

    if (l == 0) begin : gen_leaves
      assign sums = operands_i;
    end else begin : gen_adders
      for (genvar i = 0; i < Count; i++) begin : gen_adder
        // Sign-extending casts: each sum is exact in one more bit than its addends.
        assign sums[i] = Width'(gen_level[l-1].sums[2*i]) + Width'(gen_level[l-1].sums[2*i+1]);
      end
    end
  end

  assign sum_o = gen_level[Levels].sums[0];

endmodule
