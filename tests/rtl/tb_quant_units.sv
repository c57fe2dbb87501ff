// Test bench top for quant_units_test.cpp: the quantizer's helpers side by side -- the
// combinational divider and the pipelined one of the clock target's quantizer (Stages =
// QuantPipeDivStages: a quotient valid in cycle t is on div_pipe_o in cycle t + Stages), the
// E4M3 encoder, and one grid rounder per element format (the grids of nibble_pkg::FormatTable)
// on a shared input.
module tb_quant_units
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
(
  input  logic                             clk_i,
  input  logic                             rst_ni,
  input  logic                             valid_i,
  input  f32_t                             a_i,
  input  f32_t                             b_i,
  output f32_t                             div_o,
  output f32_t                             div_pipe_o,
  output logic [7:0]                       e4m3_o,
  input  logic                             stochastic_i,
  input  logic [SrBitsMax-1:0]             rand_i,
  input  logic [SrBitsWidth-1:0]           sr_bits_i,
  output logic [NumFormats-1:0]            grid_neg_o,
  output logic [NumFormats-1:0][7:0]       grid_units_o
);

  nibble_f32_div u_div (
    .clk_i,
    .rst_ni,
    .valid_i,
    .a_i,
    .b_i,
    .f32_o(div_o)
  );

  nibble_f32_div #(
    .Stages(QuantPipeDivStages)
  ) u_div_pipe (
    .clk_i,
    .rst_ni,
    .valid_i,
    .a_i,
    .b_i,
    .f32_o(div_pipe_o)
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
