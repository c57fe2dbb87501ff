// The block dot-product unit: golden dot.h's contract, one k-block per cycle.
//
// For each block (Lanes code pairs, one scale per operand) it computes
//   P   = sum_i qa_i * qb_i                exact, in units of 2^(ua + ub) (nibble_decode,
//                                          nibble_lane, nibble_adder_tree)
//   s   = fl(sa * sb)                      scales decoded per their run-time scale format
//                                          (nibble_scale_decode), multiplied in nibble_f32_mul
//   r   = fl(P * 2^(ua + ub) * s)          one rounding (nibble_f32_round)
//   acc = fl(acc + r)                      nibble_f32_add; acc starts at +0 on first_i
// The units ua, ub and the lanes' datapath are the lane design's (LaneDesign, a row of
// nibble_pkg::LaneDesignTable; every design gives the same results bit for bit).
// This module is the decoders; the arithmetic and its pipeline are nibble_dpu_core.
// Formats are selected per operand and per block at run time (mixed formats included); only
// the formats in FormatMask and the scale formats in ScaleFormatMask are built (a block in a
// format outside the mask contributes zero, one with a scale format outside it a zero
// scale). A partial block is presented zero-padded (code 0 is +0 in every format). A
// non-finite s gives r = NaN (s NaN, or s = +-Inf with P = 0) or +-Inf, as golden's
// block_product does; NaNs are the canonical F32QuietNaN.
//
// Pipeline (DpuLatency = 3 register stages, one block per cycle, no stalls):
//   cycle t     valid_i: decode, lane products, adder tree; scale decode and s = sa * sb
//   cycle t+1   r = round(P * s)
//   cycle t+2   acc + r
//   cycle t+3   acc_valid_o, acc_o = the accumulator after this block; acc_last_o if the
//               block came with last_i (acc_o is then the finished dot product)
// Handshake: valid only. The unit accepts a block in every cycle with valid_i high and never
// stalls; a consumer must take acc_o in the cycle acc_valid_o is high (acc_o holds its value
// until the next accumulated block).
module nibble_dpu import nibble_pkg::*; import nibble_f32_pkg::*; #(
  parameter int unsigned  Lanes      = 16,
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  parameter scale_format_mask_t ScaleFormatMask = ScaleFormatMaskAll
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,

  input  logic                          valid_i,
  input  logic                          first_i,    // first block of a dot product
  input  logic                          last_i,     // last block of a dot product
  input  format_e                       format_a_i,
  input  format_e                       format_b_i,
  input  scale_format_e                 scale_format_a_i,
  input  scale_format_e                 scale_format_b_i,
  input  logic [Lanes-1:0][CodeWidth-1:0] codes_a_i,  // lane i is element k0 + i
  input  logic [Lanes-1:0][CodeWidth-1:0] codes_b_i,
  input  logic [ScaleCodeWidth-1:0]     scale_a_i,  // 8-bit codes in the low bits
  input  logic [ScaleCodeWidth-1:0]     scale_b_i,

  output logic                          acc_valid_o,
  output logic                          acc_last_o,
  output f32_t                          acc_o
);

`include "nibble_assert.svh"

  localparam int unsigned MagWidth = lane_mag_width(LaneDesign, FormatMask);

  logic [Lanes-1:0]               neg_a, neg_b;
  logic [Lanes-1:0][MagWidth-1:0] mag_a, mag_b;
  f32_t                           scale_a, scale_b;

  for (genvar i = 0; i < Lanes; i++) begin : gen_decode
    nibble_decode #(
      .FormatMask(FormatMask),
      .LaneDesign(LaneDesign)
    ) u_decode_a (
      .code_i  (codes_a_i[i]),
      .format_i(format_a_i),
      .neg_o   (neg_a[i]),
      .mag_o   (mag_a[i])
    );

    nibble_decode #(
      .FormatMask(FormatMask),
      .LaneDesign(LaneDesign)
    ) u_decode_b (
      .code_i  (codes_b_i[i]),
      .format_i(format_b_i),
      .neg_o   (neg_b[i]),
      .mag_o   (mag_b[i])
    );
  end

  nibble_scale_decode #(
    .ScaleFormatMask(ScaleFormatMask)
  ) u_scale_decode_a (
    .code_i  (scale_a_i),
    .format_i(scale_format_a_i),
    .f32_o   (scale_a)
  );

  nibble_scale_decode #(
    .ScaleFormatMask(ScaleFormatMask)
  ) u_scale_decode_b (
    .code_i  (scale_b_i),
    .format_i(scale_format_b_i),
    .f32_o   (scale_b)
  );

  nibble_dpu_core #(
    .Lanes     (Lanes),
    .FormatMask(FormatMask),
    .LaneDesign(LaneDesign)
  ) u_core (
    .clk_i,
    .rst_ni,
    .valid_i,
    .first_i,
    .last_i,
    .format_a_i,
    .format_b_i,
    .neg_a_i    (neg_a),
    .mag_a_i    (mag_a),
    .neg_b_i    (neg_b),
    .mag_b_i    (mag_b),
    .scale_a_i  (scale_a),
    .scale_b_i  (scale_b),
    .acc_valid_o,
    .acc_last_o,
    .acc_o
  );

  // A block must use formats this unit was built for (others decode to zero).
  `NIBBLE_ASSUME(FormatAEnabled_M, !valid_i || format_enabled(FormatMask, format_a_i))
  `NIBBLE_ASSUME(FormatBEnabled_M, !valid_i || format_enabled(FormatMask, format_b_i))
  `NIBBLE_ASSUME(ScaleFormatAEnabled_M,
                 !valid_i || scale_format_enabled(ScaleFormatMask, scale_format_a_i))
  `NIBBLE_ASSUME(ScaleFormatBEnabled_M,
                 !valid_i || scale_format_enabled(ScaleFormatMask, scale_format_b_i))

endmodule
