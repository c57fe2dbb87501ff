// The block quantizer: one block of Lanes binary32 inputs -> Lanes 4-bit codes and the
// block-scale code, exactly as golden's quantize() treats one block (docs/numerics.md
// sections 3, 4 and 6; golden/src/quantize.cpp, scale.cpp). This is where shrinkage bias
// is born in hardware: the encode scale maps amax onto the grid top, and the grid rounding
// below it pulls magnitudes down where the spacing doubles.
//
//   stage 1  amax = max |x_i| (a balanced tree; NaN if an element is NaN, else +Inf if one
//            is infinite);
//            nan_block = the block holds NaN or +-Inf under the finite policy -> s1_*
//   stage 2  nibble_block_scale: scale code and encode scale e (fp32, nvfp4, mx-floor,
//            mx-ceil); a nan_block gets the scale format's NaN code         -> s2_*
//   stage 3  Lanes x nibble_elem_quant: v = fl(x_i * e), grid rounding (RNE ties to the
//            even code, or SR: truncate to B bits, add the B random bits, carry rounds up),
//            saturation; a zero magnitude is code 0 or keeps its sign (zero_i), a NaN v is
//            code 0; all codes 0 in a nan_block                 -> codes_o, scale_o
//
// The policies (docs/numerics.md section 3) are run-time selects like the format: zero_i
// (ZeroPositive, or ZeroSigned as IEEE/OCP/CUDA/Transformer Engine) and nonfinite_i
// (NonFiniteFinite, or NonFinitePropagate: the IEEE amax through the scale rules, as
// Transformer Engine's NVFP4 reference). Under propagate, S_enc and g come from the tensor's
// IEEE amax (golden's tensor_scale: NaN, or 1.0 for an infinite amax).
//
// The random bits are inputs: element i uses rand_i[i], its B = sr_bits_i bits in the low
// bits (golden's sr_lane_bits, i.e. the top B bits of its Philox byte). A partial block is
// presented zero-padded (zeros change neither amax nor any other code). S_enc and g are the
// per-tensor scales (golden's tensor_scale): 1.0 outside nvfp4.
//
// Timing: valid only, one block per cycle, no stalls; a block with valid_i in cycle t has its
// codes and scale in codes_o / scale_o with valid_o in cycle t + QuantLatency (3) +
// block_scale_latency(DivStages) + elem_quant_cut(DivStages). With DivStages = 0 (the default)
// the dividers (nibble_f32_div) are combinational inside stage 2; with DivStages > 0 stage 2
// is nibble_block_scale's pipeline (DivStages registers in each divider, five cuts between
// them) while the elements and selects wait beside it in a nibble_pipe delay line, and stage
// 3 is cut after each element's multiply (QuantPipeDivStages gives QuantPipeLatency, the
// clock target's quantizer).
module nibble_quantizer
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  parameter int unsigned  Lanes      = 16,
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter int unsigned  DivStages  = 0
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  input  logic                                valid_i,
  input  format_e                             format_i,
  input  scale_mode_e                         mode_i,
  input  rounding_e                           rounding_i,
  input  zero_policy_e                        zero_i,
  input  nonfinite_policy_e                   nonfinite_i,
  input  logic [SrBitsWidth-1:0]              sr_bits_i,  // B, 1..SrBitsMax (read under SR)
  input  f32_t                                s_enc_i,    // per-tensor encode scale S_enc
  input  f32_t                                g_i,        // per-tensor decode scale g
  input  logic [Lanes-1:0][F32Width-1:0]      x_i,
  input  logic [Lanes-1:0][SrBitsMax-1:0]     rand_i,
  output logic                                valid_o,
  output logic [ScaleCodeWidth-1:0]           scale_o,
  output logic [Lanes-1:0][CodeWidth-1:0]     codes_o
);

`include "nibble_assert.svh"

  `NIBBLE_ASSERT_INIT(LanesLegal_A, Lanes == 16 || Lanes == 32)
  `NIBBLE_ASSERT_INIT(FormatMaskNonEmpty_A, FormatMask != '0)

  `NIBBLE_ASSUME(FormatEnabled_M, !valid_i || format_enabled(FormatMask, format_i))
  `NIBBLE_ASSUME(SrBitsLegal_M, !valid_i || rounding_i != RoundStochastic ||
                                (sr_bits_i >= 1 && sr_bits_i <= SrBitsWidth'(SrBitsMax)))
`ifdef NIBBLE_ASSERTIONS
  // Each element's random bits fit in B bits.
  logic rand_within_sr_bits;
  always_comb begin
    rand_within_sr_bits = 1'b1;
    for (int unsigned i = 0; i < Lanes; i++) begin
      if ((SrBitsMax + 1)'(rand_i[i]) >= ((SrBitsMax + 1)'(1) << sr_bits_i)) begin
        rand_within_sr_bits = 1'b0;
      end
    end
  end
  `NIBBLE_ASSUME(RandWithinSrBits_M, !valid_i || rounding_i != RoundStochastic ||
                                     rand_within_sr_bits)
`endif

  // ---------------------------------------------------------------------------------------
  // Stage 1: finiteness and amax
  // ---------------------------------------------------------------------------------------
  logic     finite, nan_block;
  f32_abs_t amax;

  // Magnitudes order as their bit patterns without sign, +Inf above every finite value and
  // every NaN above +Inf: the largest pattern is the IEEE amax (a NaN of some payload). The
  // maximum is a balanced tree of pairwise maxima, log2(Lanes) comparisons deep; a running
  // maximum over the lanes would chain Lanes comparisons in one stage.
  localparam int unsigned TreeLevels = $clog2(Lanes);
  f32_abs_t max_level [TreeLevels+1][Lanes] /*verilator split_var*/;

  for (genvar i = 0; i < Lanes; i++) begin : gen_max_leaf
    assign max_level[0][i] = x_i[i][F32Width-2:0];
  end
  for (genvar l = 0; l < TreeLevels; l++) begin : gen_max_level
    for (genvar i = 0; i < (Lanes >> (l + 1)); i++) begin : gen_max_node
      assign max_level[l+1][i] = (max_level[l][2*i+1] > max_level[l][2*i]) ? max_level[l][2*i+1]
                                                                            : max_level[l][2*i];
    end
    for (genvar i = Lanes >> (l + 1); i < Lanes; i++) begin : gen_max_unused
      assign max_level[l+1][i] = '0;
    end
  end

  always_comb begin
    finite = 1'b1;
    for (int unsigned i = 0; i < Lanes; i++) begin
      if (&x_i[i][F32Width-2-:F32ExpBits]) finite = 1'b0;
    end
    amax      = max_level[TreeLevels][0];
    nan_block = !finite && nonfinite_i == NonFiniteFinite;
  end

  logic                                s1_valid_d, s1_valid_q, s1_nan_block_d, s1_nan_block_q;
  format_e                             s1_format_d, s1_format_q;
  scale_mode_e                         s1_mode_d, s1_mode_q;
  rounding_e                           s1_rounding_d, s1_rounding_q;
  zero_policy_e                        s1_zero_d, s1_zero_q;
  logic [SrBitsWidth-1:0]              s1_sr_bits_d, s1_sr_bits_q;
  f32_t                                s1_s_enc_d, s1_s_enc_q, s1_g_d, s1_g_q;
  f32_abs_t                            s1_amax_d, s1_amax_q;
  logic [Lanes-1:0][F32Width-1:0]      s1_x_d, s1_x_q;
  logic [Lanes-1:0][SrBitsMax-1:0]     s1_rand_d, s1_rand_q;

  // Pipelined (DivStages > 0), stage 1 loads every cycle like every register after it: no
  // load enable fans valid_i out to the block's elements and random bits.
  logic s1_load;
  assign s1_load = valid_i || DivStages > 0;

  always_comb begin
    s1_valid_d     = valid_i;
    s1_nan_block_d = s1_load ? nan_block : s1_nan_block_q;
    s1_format_d    = s1_load ? format_i : s1_format_q;
    s1_mode_d      = s1_load ? mode_i : s1_mode_q;
    s1_rounding_d  = s1_load ? rounding_i : s1_rounding_q;
    s1_zero_d      = s1_load ? zero_i : s1_zero_q;
    s1_sr_bits_d  = s1_load ? sr_bits_i : s1_sr_bits_q;
    s1_s_enc_d    = s1_load ? s_enc_i : s1_s_enc_q;
    s1_g_d        = s1_load ? g_i : s1_g_q;
    s1_amax_d     = s1_load ? amax : s1_amax_q;
    s1_x_d        = s1_load ? x_i : s1_x_q;
    s1_rand_d     = s1_load ? rand_i : s1_rand_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_valid_q <= 1'b0;
    end else begin
      s1_valid_q <= s1_valid_d;
    end
  end

  // Datapath registers: loaded with valid, never read without it; no reset needed.
  always_ff @(posedge clk_i) begin
    s1_nan_block_q <= s1_nan_block_d;
    s1_format_q    <= s1_format_d;
    s1_mode_q      <= s1_mode_d;
    s1_rounding_q  <= s1_rounding_d;
    s1_zero_q      <= s1_zero_d;
    s1_sr_bits_q  <= s1_sr_bits_d;
    s1_s_enc_q    <= s1_s_enc_d;
    s1_g_q        <= s1_g_d;
    s1_amax_q     <= s1_amax_d;
    s1_x_q        <= s1_x_d;
    s1_rand_q     <= s1_rand_d;
  end

  // ---------------------------------------------------------------------------------------
  // Stage 2: block scale and encode scale (a pipeline of block_scale_latency(DivStages)
  // cycles before the stage register when DivStages > 0)
  // ---------------------------------------------------------------------------------------
  localparam int unsigned ScaleLatency = block_scale_latency(DivStages);
  // What stage 3 reads beside the scale: nan_block, format, mode, rounding, zero, B, x, rand.
  localparam int unsigned WaitWidth = 1 + FormatSelWidth + ScaleModeSelWidth + 2 + SrBitsWidth +
                                      Lanes * (F32Width + SrBitsMax);

  logic [ScaleCodeWidth-1:0] amax_code, nan_code;
  f32_t                      encode;

  nibble_block_scale #(
    .FormatMask(FormatMask),
    .DivStages (DivStages)
  ) u_block_scale (
    .clk_i,
    .rst_ni,
    .valid_i (s1_valid_q),
    .amax_i  ({1'b0, s1_amax_q}),
    .format_i(s1_format_q),
    .mode_i  (s1_mode_q),
    .s_enc_i (s1_s_enc_q),
    .g_i     (s1_g_q),
    .code_o  (amax_code),
    .encode_o(encode)
  );

  logic                            w_valid, w_nan_block;
  format_e                         w_format;
  scale_mode_e                     w_mode;
  rounding_e                       w_rounding;
  zero_policy_e                    w_zero;
  logic [SrBitsWidth-1:0]          w_sr_bits;
  logic [Lanes-1:0][F32Width-1:0]  w_x;
  logic [Lanes-1:0][SrBitsMax-1:0] w_rand;

  nibble_pipe #(
    .Width(WaitWidth),
    .Depth(ScaleLatency)
  ) u_wait (
    .clk_i,
    .rst_ni,
    .valid_i(s1_valid_q),
    .d_i    ({s1_nan_block_q, s1_format_q, s1_mode_q, s1_rounding_q, s1_zero_q, s1_sr_bits_q,
              s1_x_q, s1_rand_q}),
    .valid_o(w_valid),
    .q_o    ({w_nan_block, w_format, w_mode, w_rounding, w_zero, w_sr_bits, w_x, w_rand})
  );

  always_comb begin
    nan_code = '0;
    for (int unsigned f = 0; f < NumScaleFormats; f++) begin
      if (mode_scale_format(w_mode) == scale_format_e'(f)) begin
        nan_code = ScaleFormatTable[f].nan_code;
      end
    end
  end

  logic                            s2_valid_d, s2_valid_q, s2_nan_block_d, s2_nan_block_q;
  format_e                         s2_format_d, s2_format_q;
  rounding_e                       s2_rounding_d, s2_rounding_q;
  zero_policy_e                    s2_zero_d, s2_zero_q;
  logic [SrBitsWidth-1:0]          s2_sr_bits_d, s2_sr_bits_q;
  logic [ScaleCodeWidth-1:0]       s2_scale_d, s2_scale_q;
  logic [Lanes-1:0][F32Width-1:0]  s2_x_d, s2_x_q;
  logic [Lanes-1:0][SrBitsMax-1:0] s2_rand_d, s2_rand_q;
  logic [Lanes-1:0][F32Width-1:0]  s2_encode;  // lane i's encode scale

  // The pipelined quantizer loads stage 2 every cycle, as its delay lines do (nibble_pipe):
  // no load enable fans w_valid out to the block's elements and random bits.
  logic s2_load;
  assign s2_load = w_valid || DivStages > 0;

  always_comb begin
    s2_valid_d     = w_valid;
    s2_nan_block_d = s2_load ? w_nan_block : s2_nan_block_q;
    s2_format_d    = s2_load ? w_format : s2_format_q;
    s2_rounding_d  = s2_load ? w_rounding : s2_rounding_q;
    s2_zero_d      = s2_load ? w_zero : s2_zero_q;
    s2_sr_bits_d   = s2_load ? w_sr_bits : s2_sr_bits_q;
    s2_scale_d     = s2_load ? (w_nan_block ? nan_code : amax_code) : s2_scale_q;
    s2_x_d         = s2_load ? w_x : s2_x_q;
    s2_rand_d      = s2_load ? w_rand : s2_rand_q;
  end

  // The encode scale feeds every lane's multiply. Pipelined, each lane has its own copy of
  // its register, so no flop drives all Lanes multipliers; (* keep *) stops synthesis from
  // merging the copies back into one.
  if (DivStages > 0) begin : gen_encode_per_lane
    for (genvar i = 0; i < Lanes; i++) begin : gen_lane_copy
      f32_t encode_q;
      (* keep *) always_ff @(posedge clk_i) encode_q <= encode;
      assign s2_encode[i] = encode_q;
    end
  end else begin : gen_encode_shared
    f32_t encode_d, encode_q;
    assign encode_d = w_valid ? encode : encode_q;
    always_ff @(posedge clk_i) encode_q <= encode_d;
    assign s2_encode = {Lanes{encode_q}};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s2_valid_q <= 1'b0;
    end else begin
      s2_valid_q <= s2_valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    s2_nan_block_q <= s2_nan_block_d;
    s2_format_q    <= s2_format_d;
    s2_rounding_q  <= s2_rounding_d;
    s2_zero_q      <= s2_zero_d;
    s2_sr_bits_q  <= s2_sr_bits_d;
    s2_scale_q    <= s2_scale_d;
    s2_x_q        <= s2_x_d;
    s2_rand_q     <= s2_rand_d;
  end

  // ---------------------------------------------------------------------------------------
  // Stage 3: elements
  // ---------------------------------------------------------------------------------------
  logic [Lanes-1:0][CodeWidth-1:0] codes;

  // With DivStages > 0 each element is cut after its multiply (elem_quant_cut): the block's
  // NaN flag and scale code wait beside it.
  localparam int unsigned ElemCut = elem_quant_cut(DivStages);

  for (genvar i = 0; i < Lanes; i++) begin : gen_lane
    nibble_elem_quant #(
      .FormatMask(FormatMask),
      .Cut       (ElemCut)
    ) u_elem_quant (
      .clk_i,
      .rst_ni,
      .valid_i   (s2_valid_q),
      .x_i       (s2_x_q[i]),
      .encode_i  (s2_encode[i]),
      .format_i  (s2_format_q),
      .rounding_i(s2_rounding_q),
      .zero_i    (s2_zero_q),
      .rand_i    (s2_rand_q[i]),
      .sr_bits_i (s2_sr_bits_q),
      .code_o    (codes[i])
    );
  end

  logic                            e_valid, e_nan_block;
  logic [ScaleCodeWidth-1:0]       e_scale;

  nibble_pipe #(
    .Width(1 + ScaleCodeWidth),
    .Depth(ElemCut)
  ) u_elem_wait (
    .clk_i,
    .rst_ni,
    .valid_i(s2_valid_q),
    .d_i    ({s2_nan_block_q, s2_scale_q}),
    .valid_o(e_valid),
    .q_o    ({e_nan_block, e_scale})
  );

  logic                            s3_valid_d, s3_valid_q;
  logic [ScaleCodeWidth-1:0]       s3_scale_d, s3_scale_q;
  logic [Lanes-1:0][CodeWidth-1:0] s3_codes_d, s3_codes_q;

  always_comb begin
    s3_valid_d = e_valid;
    s3_scale_d = e_valid ? e_scale : s3_scale_q;
    s3_codes_d = e_valid ? (e_nan_block ? '0 : codes) : s3_codes_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s3_valid_q <= 1'b0;
    end else begin
      s3_valid_q <= s3_valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    s3_scale_q <= s3_scale_d;
    s3_codes_q <= s3_codes_d;
  end

  assign valid_o = s3_valid_q;
  assign scale_o = s3_scale_q;
  assign codes_o = s3_codes_q;

  `NIBBLE_ASSERT_KNOWN(ValidKnown_A, valid_o)
  `NIBBLE_ASSERT(OutputsKnown_A, !valid_o || !$isunknown({scale_o, codes_o}))

endmodule
