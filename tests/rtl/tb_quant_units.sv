// Test bench top for quant_test.cpp's unit tests: the quantizer's combinational helpers side
// by side -- the divider, the E4M3 encoder, and one grid rounder per element format (the
// grids of nibble_pkg::FormatTable) on a shared input.
module tb_quant_units
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
(
  input  f32_t                             a_i,
  input  f32_t                             b_i,
  output f32_t                             div_o,
  output logic [7:0]                       e4m3_o,
  input  logic                             stochastic_i,
  input  logic [SrBitsMax-1:0]             rand_i,
  input  logic [SrBitsWidth-1:0]           sr_bits_i,
  output logic [NumFormats-1:0]            grid_neg_o,
  output logic [NumFormats-1:0][7:0]       grid_units_o
);

  nibble_f32_div u_div (
    .a_i,
    .b_i,
    .f32_o(div_o)
  );

  nibble_e4m3_encode u_e4m3_encode (
    .f32_i (a_i),
    .code_o(e4m3_o)
  );

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    localparam int unsigned MaxUnits = max_units(format_e'(f));
    logic [$clog2(MaxUnits + 1)-1:0] units;
    nibble_grid_round #(
      .LsbExp   (lsb_exp(format_e'(f))),
      .ManBits  (FormatTable[f].man_bits),
      .MaxUnits (MaxUnits),
      .SrBitsMax(SrBitsMax)
    ) u_grid_round (
      .v_i         (a_i),
      .stochastic_i,
      .rand_i,
      .sr_bits_i,
      .neg_o       (grid_neg_o[f]),
      .units_o     (units)
    );
    assign grid_units_o[f] = 8'(units);
  end

endmodule
