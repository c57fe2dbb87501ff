// A finite block's amax -> its block-scale code and its encode scale, for a run-time scale
// mode and element format: the twin of golden's block_scale (golden/src/scale.cpp).
//
//   fp32      s = fl(amax / gmax)                       code = bits(s)
//             e = min(fl(1 / s), FLT_MAX)
//   nvfp4     s = E4M3(fl(amax * fl(S_enc * fl(1 / gmax))))   RNE, satfinite
//             e = min(fl(1 / fl(dec(s) * g)), FLT_MAX)
//   mx-floor  k = floor(log2 amax) - emax               clamped to [-127, 127]
//   mx-ceil   k = the smallest k with amax <= gmax * 2^k, clamped likewise
//             code = k + 127 (UE8M0), e = 2^-k exactly; an all-zero block has k = -127
// Two dividers are shared by the modes: the first computes amax / gmax (fp32) or 1 / gmax
// (nvfp4), the second 1 / s (fp32) or 1 / fl(dec(s) * g) (nvfp4). gmax, emax and the
// mx-ceil threshold are per-format constants from nibble_quant_pkg, muxed over the formats
// of FormatMask. The multiplications are nibble_f32_mul, dec(s) is nibble_scale_decode.
// amax is non-negative; NaN and +Inf are the non-finite policy 'propagate' (golden's
// block_scale): a NaN amax gives the mode's NaN code and a NaN encode scale; +Inf flows
// through the fp32 and nvfp4 arithmetic (+Inf with encode 0; E4M3 448) and takes mx's k
// to 127.
//
// Latency: block_scale_latency(DivStages) cycles (nibble_quant_pkg). With DivStages = 0 (the
// default) it is purely combinational. With DivStages > 0 each divider is pipelined with that
// many registers inside (nibble_f32_div), and five registers cut the path between them: after
// the first divider (A), after fl(S_enc * fl(1 / gmax)) (B), after amax times it (C1), after
// the E4M3 encode and its decode (C), and after the multiply by g (D). The block's inputs ride
// beside the arithmetic in nibble_pipe delay lines, and the mx rules run at the end on the carried
// amax. One block per cycle; valid_i marks the cycles that hold one.
module nibble_block_scale
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter int unsigned  DivStages  = 0
) (
  input  logic                      clk_i,   // read only with DivStages > 0
  input  logic                      rst_ni,
  input  logic                      valid_i,
  input  f32_t                      amax_i,
  input  format_e                   format_i,
  input  scale_mode_e               mode_i,
  input  f32_t                      s_enc_i,   // per-tensor encode scale (nvfp4)
  input  f32_t                      g_i,       // per-tensor decode scale (nvfp4)
  output logic [ScaleCodeWidth-1:0] code_o,
  output f32_t                      encode_o
);

  // UE8M0: k in [-Bias, Bias], code = k + Bias.
  localparam scale_format_info_t Ue8m0 = ScaleFormatTable[ScaleUE8M0];
  localparam int unsigned KWidth = 10;  // k0 in [-149 - 2, 127] before clamping
  localparam logic signed [KWidth-1:0] KMax = KWidth'(Ue8m0.bias);
  localparam logic signed [KWidth-1:0] KMin = -KWidth'(Ue8m0.bias);
  localparam int unsigned MsbWidth = $clog2(F32SigWidth);

  // The five cuts between the dividers (A, B, C1, C, D): registers with DivStages > 0, wires
  // otherwise.
  localparam int unsigned Cut = (DivStages > 0) ? 1 : 0;
  // The block's inputs, carried beside the arithmetic: amax, format, mode, S_enc, g.
  localparam int unsigned SideWidth = 3 * F32Width + FormatSelWidth + ScaleModeSelWidth;

  // ---------------------------------------------------------------------------------------
  // Per-format constants of a format: gmax at the input, emax and the mx-ceil threshold at
  // the end (of the carried format)
  // ---------------------------------------------------------------------------------------
  f32_t                       gmax;
  logic signed [KWidth-1:0]   emax;
  logic [F32SigWidth-1:0]     ceil_threshold;
  format_e                    format_end;

  always_comb begin
    gmax = F32One;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (FormatMask[f] && format_i == format_e'(f)) gmax = gmax_f32(format_e'(f));
    end
  end

  always_comb begin
    emax           = '0;
    ceil_threshold = '0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (FormatMask[f] && format_end == format_e'(f)) begin
        emax           = KWidth'(format_emax(format_e'(f)));
        ceil_threshold = mx_ceil_threshold(format_e'(f));
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // fp32 and nvfp4: the two divisions and the multiplies between them
  // ---------------------------------------------------------------------------------------
  f32_t div1_num, div1_q, div2_den, div2_q;
  logic valid_a, valid_b, valid_c, valid_d, valid_e;
  logic [SideWidth-1:0] side_a, side_b, side_c, side_d, side_e, side_end;

  assign div1_num = (mode_i == ModeNVFP4) ? F32One : amax_i;

  nibble_f32_div #(
    .Stages(DivStages)
  ) u_div_gmax (
    .clk_i,
    .rst_ni,
    .valid_i,
    .a_i  (div1_num),
    .b_i  (gmax),
    .f32_o(div1_q)
  );

  nibble_pipe #(
    .Width(SideWidth),
    .Depth(DivStages)
  ) u_side_div1 (
    .clk_i,
    .rst_ni,
    .valid_i,
    .d_i    ({amax_i, format_i, mode_i, s_enc_i, g_i}),
    .valid_o(valid_a),
    .q_o    (side_a)
  );

  // Cut A: the first quotient (amax / gmax under fp32, 1 / gmax under nvfp4).
  f32_t div1_b, enc_gmax;

  nibble_pipe #(
    .Width(SideWidth + F32Width),
    .Depth(Cut)
  ) u_cut_a (
    .clk_i,
    .rst_ni,
    .valid_i(valid_a),
    .d_i    ({side_a, div1_q}),
    .valid_o(valid_b),
    .q_o    ({side_b, div1_b})
  );

  nibble_f32_mul u_mul_enc (
    .a_i  (side_b[F32Width+:F32Width]),  // S_enc
    .b_i  (div1_b),                      // fl(1 / gmax)
    .f32_o(enc_gmax)
  );

  // Cut B: fl(S_enc * fl(1 / gmax)).
  f32_t div1_c, enc_gmax_c, s_dec, e4m3_dec;
  logic [7:0] e4m3_code;

  nibble_pipe #(
    .Width(SideWidth + 2 * F32Width),
    .Depth(Cut)
  ) u_cut_b (
    .clk_i,
    .rst_ni,
    .valid_i(valid_b),
    .d_i    ({side_b, div1_b, enc_gmax}),
    .valid_o(valid_c),
    .q_o    ({side_c, div1_c, enc_gmax_c})
  );

  nibble_f32_mul u_mul_amax (
    .a_i  (side_c[SideWidth-1-:F32Width]),  // amax
    .b_i  (enc_gmax_c),
    .f32_o(s_dec)
  );

  // Cut C1: fl(amax * fl(S_enc * fl(1 / gmax))), the scale before its E4M3 rounding.
  f32_t div1_c1, s_dec_c1;
  logic valid_c1;
  logic [SideWidth-1:0] side_c1;

  nibble_pipe #(
    .Width(SideWidth + 2 * F32Width),
    .Depth(Cut)
  ) u_cut_c1 (
    .clk_i,
    .rst_ni,
    .valid_i(valid_c),
    .d_i    ({side_c, div1_c, s_dec}),
    .valid_o(valid_c1),
    .q_o    ({side_c1, div1_c1, s_dec_c1})
  );

  nibble_e4m3_encode u_e4m3_encode (
    .f32_i (s_dec_c1),
    .code_o(e4m3_code)
  );

  nibble_scale_decode u_e4m3_decode (
    .code_i  (ScaleCodeWidth'(e4m3_code)),
    .format_i(ScaleE4M3),
    .f32_o   (e4m3_dec)
  );

  // Cut C: the E4M3 scale code and its value.
  f32_t div1_d, e4m3_dec_d, dec_g;
  logic [7:0] e4m3_code_d;

  nibble_pipe #(
    .Width(SideWidth + 2 * F32Width + 8),
    .Depth(Cut)
  ) u_cut_c (
    .clk_i,
    .rst_ni,
    .valid_i(valid_c1),
    .d_i    ({side_c1, div1_c1, e4m3_code, e4m3_dec}),
    .valid_o(valid_d),
    .q_o    ({side_d, div1_d, e4m3_code_d, e4m3_dec_d})
  );

  nibble_f32_mul u_mul_g (
    .a_i  (e4m3_dec_d),
    .b_i  (side_d[0+:F32Width]),  // g
    .f32_o(dec_g)
  );

  // Cut D: fl(dec(s) * g), the nvfp4 divisor.
  f32_t div1_e, dec_g_e, div1_end;
  logic [7:0] e4m3_code_e, e4m3_code_end;
  logic unused_valid_end;

  nibble_pipe #(
    .Width(SideWidth + 2 * F32Width + 8),
    .Depth(Cut)
  ) u_cut_d (
    .clk_i,
    .rst_ni,
    .valid_i(valid_d),
    .d_i    ({side_d, div1_d, e4m3_code_d, dec_g}),
    .valid_o(valid_e),
    .q_o    ({side_e, div1_e, e4m3_code_e, dec_g_e})
  );

  assign div2_den = (scale_mode_e'(side_e[2*F32Width+:ScaleModeSelWidth]) == ModeNVFP4) ? dec_g_e
                                                                                       : div1_e;

  nibble_f32_div #(
    .Stages(DivStages)
  ) u_div_encode (
    .clk_i,
    .rst_ni,
    .valid_i(valid_e),
    .a_i    (F32One),
    .b_i    (div2_den),
    .f32_o  (div2_q)
  );

  nibble_pipe #(
    .Width(SideWidth + F32Width + 8),
    .Depth(DivStages)
  ) u_side_div2 (
    .clk_i,
    .rst_ni,
    .valid_i(valid_e),
    .d_i    ({side_e, div1_e, e4m3_code_e}),
    .valid_o(unused_valid_end),
    .q_o    ({side_end, div1_end, e4m3_code_end})
  );

  // The carried inputs at the end, for the mx rules and the select.
  f32_t        amax_end;
  scale_mode_e mode_end;
  f32_t        unused_s_enc_end, unused_g_end;

  logic        unused_amax_sign;

  assign {amax_end, format_end, mode_end, unused_s_enc_end, unused_g_end} = side_end;
  assign unused_amax_sign = amax_end[F32Width-1];  // amax is non-negative

  // ---------------------------------------------------------------------------------------
  // mx: exact integer exponent rules
  // ---------------------------------------------------------------------------------------
  logic [F32SigWidth-1:0]   amax_sig, amax_norm;
  logic [MsbWidth-1:0]      amax_msb;
  logic signed [KWidth-1:0] floor_log2, k_floor, k_ceil, k_sel, k;
  logic [F32ExpBits-1:0]    neg_k_biased, ue8m0_code;
  f32_t                     pow2_encode;

  always_comb begin
    amax_sig = f32_significand(amax_end[F32Width-2:0]);
    amax_msb = '0;
    for (int unsigned i = 0; i < F32SigWidth; i++) begin
      if (amax_sig[i]) amax_msb = MsbWidth'(i);
    end
  end

  logic amax_nan, amax_inf;
  assign amax_nan = f32_is_nan(amax_end[F32Width-2:0]);
  assign amax_inf = f32_is_inf(amax_end[F32Width-2:0]);

  always_comb begin
    amax_norm  = amax_sig << (MsbWidth'(F32ManBits) - amax_msb);
    floor_log2 = KWidth'(f32_scale_exp(amax_end[F32Width-2-:F32ExpBits])) -
                 KWidth'(F32Bias + F32ManBits) + KWidth'(amax_msb);
    k_floor    = floor_log2 - emax;
    k_ceil     = (amax_norm <= ceil_threshold) ? k_floor : k_floor + KWidth'(1);
    k_sel      = (mode_end == ModeMXCeil) ? k_ceil : k_floor;
    if (amax_sig == '0) k_sel = KMin;
    if (amax_inf) k_sel = KMax;  // log2(+Inf) = +Inf, clamped
    k = (k_sel < KMin) ? KMin : ((k_sel > KMax) ? KMax : k_sel);
    ue8m0_code = F32ExpBits'(k + KWidth'(Ue8m0.bias));
    // e = 2^-k: a normal binary32 unless -k = -127, the one subnormal power (bit 22).
    neg_k_biased = F32ExpBits'(KWidth'(F32Bias) - k);
    pow2_encode  = (neg_k_biased == '0) ? f32_t'(1) << (F32ManBits - 1)
                                        : {1'b0, neg_k_biased, {F32ManBits{1'b0}}};
  end

  // ---------------------------------------------------------------------------------------
  // Select by mode; min(., FLT_MAX) maps +Inf (1 / 0, or 1 / a tiny scale) to FLT_MAX.
  // ---------------------------------------------------------------------------------------
  always_comb begin
    code_o   = '0;
    encode_o = F32One;
    unique case (mode_end)
      ModeFP32: begin
        code_o   = div1_end;
        encode_o = div2_q;
      end
      ModeNVFP4: begin
        code_o   = ScaleCodeWidth'(e4m3_code_end);
        encode_o = div2_q;
      end
      ModeMXFloor, ModeMXCeil: begin
        code_o   = ScaleCodeWidth'(ue8m0_code);
        encode_o = pow2_encode;
      end
      default: begin
        code_o   = '0;
        encode_o = F32One;
      end
    endcase
    if (encode_o == F32PosInf) encode_o = F32MaxFin;
    // A NaN amax: every mode's NaN code and a NaN encode scale (golden's nan_block_scale).
    if (amax_nan) begin
      code_o   = '0;
      for (int unsigned sf = 0; sf < NumScaleFormats; sf++) begin
        if (mode_scale_format(mode_end) == scale_format_e'(sf)) begin
          code_o = ScaleFormatTable[sf].nan_code;
        end
      end
      encode_o = F32QuietNaN;
    end
  end

endmodule
