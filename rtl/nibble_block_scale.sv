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
// to 127. Purely combinational.
module nibble_block_scale
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  parameter format_mask_t FormatMask = FormatMaskAll
) (
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

  // ---------------------------------------------------------------------------------------
  // Per-format constants of the selected format
  // ---------------------------------------------------------------------------------------
  f32_t                       gmax;
  logic signed [KWidth-1:0]   emax;
  logic [F32SigWidth-1:0]     ceil_threshold;

  always_comb begin
    gmax           = F32One;
    emax           = '0;
    ceil_threshold = '0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (FormatMask[f] && format_i == format_e'(f)) begin
        gmax           = gmax_f32(format_e'(f));
        emax           = KWidth'(format_emax(format_e'(f)));
        ceil_threshold = mx_ceil_threshold(format_e'(f));
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // fp32 and nvfp4: the two divisions
  // ---------------------------------------------------------------------------------------
  f32_t div1_num, div1_q, inv_gmax, enc_gmax, s_dec, e4m3_dec, dec_g, div2_den, div2_q;
  logic [7:0] e4m3_code;

  assign div1_num = (mode_i == ModeNVFP4) ? F32One : amax_i;

  nibble_f32_div u_div_gmax (
    .a_i  (div1_num),
    .b_i  (gmax),
    .f32_o(div1_q)
  );

  assign inv_gmax = div1_q;

  nibble_f32_mul u_mul_enc (
    .a_i  (s_enc_i),
    .b_i  (inv_gmax),
    .f32_o(enc_gmax)
  );

  nibble_f32_mul u_mul_amax (
    .a_i  (amax_i),
    .b_i  (enc_gmax),
    .f32_o(s_dec)
  );

  nibble_e4m3_encode u_e4m3_encode (
    .f32_i (s_dec),
    .code_o(e4m3_code)
  );

  nibble_scale_decode u_e4m3_decode (
    .code_i  (ScaleCodeWidth'(e4m3_code)),
    .format_i(ScaleE4M3),
    .f32_o   (e4m3_dec)
  );

  nibble_f32_mul u_mul_g (
    .a_i  (e4m3_dec),
    .b_i  (g_i),
    .f32_o(dec_g)
  );

  assign div2_den = (mode_i == ModeNVFP4) ? dec_g : div1_q;

  nibble_f32_div u_div_encode (
    .a_i  (F32One),
    .b_i  (div2_den),
    .f32_o(div2_q)
  );

  // ---------------------------------------------------------------------------------------
  // mx: exact integer exponent rules
  // ---------------------------------------------------------------------------------------
  logic [F32SigWidth-1:0]   amax_sig, amax_norm;
  logic [MsbWidth-1:0]      amax_msb;
  logic signed [KWidth-1:0] floor_log2, k_floor, k_ceil, k_sel, k;
  logic [F32ExpBits-1:0]    neg_k_biased, ue8m0_code;
  f32_t                     pow2_encode;

  always_comb begin
    amax_sig = f32_significand(amax_i[F32Width-2:0]);
    amax_msb = '0;
    for (int unsigned i = 0; i < F32SigWidth; i++) begin
      if (amax_sig[i]) amax_msb = MsbWidth'(i);
    end
  end

  logic amax_nan, amax_inf;
  assign amax_nan = f32_is_nan(amax_i[F32Width-2:0]);
  assign amax_inf = f32_is_inf(amax_i[F32Width-2:0]);

  always_comb begin
    amax_norm  = amax_sig << (MsbWidth'(F32ManBits) - amax_msb);
    floor_log2 = KWidth'(f32_scale_exp(amax_i[F32Width-2-:F32ExpBits])) -
                 KWidth'(F32Bias + F32ManBits) + KWidth'(amax_msb);
    k_floor    = floor_log2 - emax;
    k_ceil     = (amax_norm <= ceil_threshold) ? k_floor : k_floor + KWidth'(1);
    k_sel      = (mode_i == ModeMXCeil) ? k_ceil : k_floor;
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
    unique case (mode_i)
      ModeFP32: begin
        code_o   = div1_q;
        encode_o = div2_q;
      end
      ModeNVFP4: begin
        code_o   = ScaleCodeWidth'(e4m3_code);
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
        if (mode_scale_format(mode_i) == scale_format_e'(sf)) code_o = ScaleFormatTable[sf].nan_code;
      end
      encode_o = F32QuietNaN;
    end
  end

endmodule
