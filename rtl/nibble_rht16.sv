// The 16-point Random Hadamard Transform of one group: golden's rht_group with n = 16
// (docs/numerics.md section 5; golden/src/rht.cpp), in binary32, in exactly its order:
//   1. sign flip  y_i = -x_i where signs_i[i] is set            (exact: the sign bit)
//   2. butterflies h = 1, 2, 4, 8: for every i with (i & h) == 0
//      (y_i, y_{i+h}) <- (fl(y_i + y_{i+h}), fl(y_i - y_{i+h}))     nibble_f32_add
//   3. y_i <- fl(y_i * 2^-2)                                         nibble_f32_mul
//      (exact unless y_i is tiny: the multiplier rounds subnormals as golden's fl(y * 0.25))
//   4. with bf16_i, each y_i rounded to bfloat16, RNE (golden's round_to_bf16): a carry may
//      reach Inf; a NaN stays the quiet NaN.
// fl(a - b) is fl(a + (-b)) (IEEE: negation is exact), so one adder serves both outputs of a
// butterfly. NaNs are the canonical F32QuietNaN (tests compare NaN by NaN-ness).
//
// signs_i is the group's sign mask: bit i set = -1 (golden's rht_signs word 0 for n = 16).
//
//   stage 1  sign flip, butterfly h = 1    -> gen_level[0].y_q
//   stage 2  butterfly h = 2               -> gen_level[1].y_q
//   stage 3  butterfly h = 4               -> gen_level[2].y_q
//   stage 4  butterfly h = 8               -> gen_level[3].y_q
//   stage 5  * 2^-2, bf16                  -> y_o
// Stages 1-4 each hold one binary32 add (stage 1 behind the sign flip's xor), stage 5 the
// multiply and the rounding: the clock is set by one of these, not by the last butterfly,
// the multiplier and the rounding in series.
// Timing: valid only, one group per cycle, no stalls; a group with valid_i in cycle t is in
// y_o with valid_o in cycle t + RhtLatency (5).
module nibble_rht16
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  localparam int unsigned N      = 16,
  localparam int unsigned Levels = $clog2(N)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       valid_i,
  input  logic                       bf16_i,   // round the outputs to bfloat16
  input  logic [N-1:0]               signs_i,  // bit i set: x_i is negated first
  input  logic [N-1:0][F32Width-1:0] x_i,
  output logic                       valid_o,
  output logic [N-1:0][F32Width-1:0] y_o
);

`include "nibble_assert.svh"

  localparam int unsigned Bf16Drop = F32Width / 2;  // low bits bfloat16 does not keep
  // binary32's quiet-NaN bit (the top mantissa bit) within the upper half.
  localparam logic [Bf16Drop-1:0] Bf16QuietBit = Bf16Drop'(1) << (F32ManBits - 1 - Bf16Drop);

  // The operands of level l (stage l + 1) and their valid/bf16 bits; level 0 reads the
  // sign-flipped inputs, level l > 0 the registers of level l - 1. Index Levels is the
  // registered last butterfly level, the input of the normalization stage.
  logic [N-1:0][F32Width-1:0] lvl_in  [Levels+1];
  logic [N-1:0][F32Width-1:0] lvl_out [Levels];
  logic [Levels:0]            lvl_valid, lvl_bf16;

  always_comb begin
    for (int unsigned i = 0; i < N; i++) begin
      lvl_in[0][i] = {x_i[i][F32Width-1] ^ signs_i[i], x_i[i][F32Width-2:0]};
    end
  end
  assign lvl_valid[0] = valid_i;
  assign lvl_bf16[0]  = bf16_i;

  for (genvar l = 0; l < Levels; l++) begin : gen_level
    localparam int unsigned H = 1 << l;

    for (genvar i = 0; i < N; i++) begin : gen_butterfly
      if ((i & H) == 0) begin : gen_pair
        f32_t b_neg;
        assign b_neg = {~lvl_in[l][i+H][F32Width-1], lvl_in[l][i+H][F32Width-2:0]};

        nibble_f32_add u_sum (
          .a_i  (lvl_in[l][i]),
          .b_i  (lvl_in[l][i+H]),
          .f32_o(lvl_out[l][i])
        );

        nibble_f32_add u_diff (
          .a_i  (lvl_in[l][i]),
          .b_i  (b_neg),
          .f32_o(lvl_out[l][i+H])
        );
      end
    end

    // The stage register of level l.
    logic                       valid_d, valid_q, bf16_d, bf16_q;
    logic [N-1:0][F32Width-1:0] y_d, y_q;

    always_comb begin
      valid_d = lvl_valid[l];
      bf16_d  = lvl_valid[l] ? lvl_bf16[l] : bf16_q;
      y_d     = lvl_valid[l] ? lvl_out[l] : y_q;
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        valid_q <= 1'b0;
      end else begin
        valid_q <= valid_d;
      end
    end

    // Datapath registers: loaded with valid, never read without it; no reset needed.
    always_ff @(posedge clk_i) begin
      bf16_q <= bf16_d;
      y_q    <= y_d;
    end

    assign lvl_in[l+1]    = y_q;
    assign lvl_valid[l+1] = valid_q;
    assign lvl_bf16[l+1]  = bf16_q;
  end

  // Normalization and the optional bfloat16 rounding, then the output register.
  logic [N-1:0][F32Width-1:0] scaled, rounded;

  for (genvar i = 0; i < N; i++) begin : gen_output
    nibble_f32_mul u_normalize (
      .a_i  (lvl_in[Levels][i]),
      .b_i  (F32Quarter),
      .f32_o(scaled[i])
    );

    logic [Bf16Drop-1:0] lower, upper;
    logic                round_up;
    always_comb begin
      lower    = scaled[i][Bf16Drop-1:0];
      upper    = scaled[i][F32Width-1:Bf16Drop];
      round_up = (lower > {1'b1, {(Bf16Drop-1){1'b0}}}) ||
                 ((lower == {1'b1, {(Bf16Drop-1){1'b0}}}) && upper[0]);
      if (f32_is_nan(scaled[i][F32Width-2:0])) begin
        // golden: the quiet bit set, the low half cleared.
        rounded[i] = {upper | Bf16QuietBit, {Bf16Drop{1'b0}}};
      end else if (f32_is_inf(scaled[i][F32Width-2:0])) begin
        rounded[i] = scaled[i];
      end else begin
        // A carry moves into the exponent (and from the largest finite into +-Inf); the
        // sign bit never changes (all-ones above it is NaN).
        rounded[i] = {upper + Bf16Drop'(round_up), {Bf16Drop{1'b0}}};
      end
    end
  end

  logic                       out_valid_d, out_valid_q;
  logic [N-1:0][F32Width-1:0] out_y_d, out_y_q;

  always_comb begin
    out_valid_d = lvl_valid[Levels];
    out_y_d     = lvl_valid[Levels] ? (lvl_bf16[Levels] ? rounded : scaled) : out_y_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else begin
      out_valid_q <= out_valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    out_y_q <= out_y_d;
  end

  assign valid_o = out_valid_q;
  assign y_o     = out_y_q;

  `NIBBLE_ASSERT_KNOWN(ValidKnown_A, valid_o)
  `NIBBLE_ASSERT(OutputsKnown_A, !valid_o || !$isunknown(y_o))

endmodule
