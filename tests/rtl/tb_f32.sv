// Test bench top for f32_test.cpp: the binary32 primitives side by side (the rounder at
// the widest magnitude golden's round_to_f32 takes) and the scale decoder.
module tb_f32 import nibble_pkg::*; import nibble_f32_pkg::*; (
  input  logic                      round_neg_i,
  input  logic [63:0]               round_mag_i,
  input  logic signed [11:0]        round_exp_i,
  output f32_t                      round_o,

  input  f32_t                      a_i,
  input  f32_t                      b_i,
  output f32_t                      mul_o,
  output f32_t                      add_o,

  input  logic [ScaleCodeWidth-1:0] scale_code_i,
  input  scale_format_e             scale_format_i,
  output f32_t                      scale_o
);

  nibble_f32_round #(
    .MagWidth(64),
    .ExpWidth(12)
  ) u_round (
    .neg_i(round_neg_i),
    .mag_i(round_mag_i),
    .exp_i(round_exp_i),
    .f32_o(round_o)
  );

  nibble_f32_mul u_mul (
    .a_i,
    .b_i,
    .f32_o(mul_o)
  );

  nibble_f32_add u_add (
    .a_i,
    .b_i,
    .f32_o(add_o)
  );

  nibble_scale_decode u_scale_decode (
    .code_i  (scale_code_i),
    .format_i(scale_format_i),
    .f32_o   (scale_o)
  );

endmodule
