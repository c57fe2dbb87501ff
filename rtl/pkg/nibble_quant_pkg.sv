// The quantizer's and the RHT unit's run-time selects and derived constants.
//
// Mirrors golden/include/nibble/scale.h (ScaleMode, NonFinitePolicy), quantize.h (Rounding,
// ZeroPolicy) and philox.h (the
// B <= 8 stochastic-rounding bits of one Philox byte). Every per-format constant the
// quantizer needs (gmax as binary32, emax, the mx-ceil threshold) is derived here from
// nibble_pkg::FormatTable, so adding a format stays an edit to nibble_pkg alone.
package nibble_quant_pkg;

  import nibble_f32_pkg::*;
  import nibble_pkg::*;

  // Values equal golden's nibble::ScaleMode.
  localparam int unsigned ScaleModeSelWidth = 2;
  typedef enum logic [ScaleModeSelWidth-1:0] {
    ModeFP32    = 2'd0,  // FP32 block scale: s = fl(amax / gmax)
    ModeNVFP4   = 2'd1,  // E4M3 block scale under an FP32 tensor scale
    ModeMXFloor = 2'd2,  // UE8M0, k = floor(log2 amax) - emax
    ModeMXCeil  = 2'd3   // UE8M0, smallest k with amax <= gmax * 2^k
  } scale_mode_e;

  // Values equal golden's nibble::Rounding.
  typedef enum logic [0:0] {
    RoundNearestEven = 1'b0,
    RoundStochastic  = 1'b1
  } rounding_e;

  // The quantizer's policies (docs/numerics.md section 3). Values equal golden's
  // nibble::ZeroPolicy: the code of an element whose magnitude rounds to zero (0, or the sign
  // kept: minifloat 0x8 for a negative v).
  typedef enum logic [0:0] {
    ZeroPositive = 1'b0,
    ZeroSigned   = 1'b1
  } zero_policy_e;

  // Values equal golden's nibble::NonFinitePolicy: a block holding NaN/Inf gets the NaN scale
  // (finite), or its IEEE amax goes through the scale rules (propagate, Transformer Engine's).
  typedef enum logic [0:0] {
    NonFiniteFinite    = 1'b0,
    NonFinitePropagate = 1'b1
  } nonfinite_policy_e;

  // Stochastic rounding takes B in 1..SrBitsMax random bits per element (one Philox byte).
  localparam int unsigned SrBitsMax   = 8;
  localparam int unsigned SrBitsWidth = $clog2(SrBitsMax + 1);

  // Binary32 constants of the block-scale rules.
  localparam f32_t F32One    = 32'h3F80_0000;
  localparam f32_t F32MaxFin = 32'h7F7F_FFFF;  // FLT_MAX
  localparam f32_t F32Quarter = 32'h3E80_0000;  // 2^-2, the 16-point RHT normalization

  // The scale format each scale mode stores (golden's scale_format(ScaleMode)).
  function automatic scale_format_e mode_scale_format(scale_mode_e m);
    if (m == ModeFP32) return ScaleFP32;
    if (m == ModeNVFP4) return ScaleE4M3;
    return ScaleUE8M0;
  endfunction

  function automatic int msb_index(int unsigned v);
    int m = 0;
    for (int i = 0; i < 32; i++) begin
      if (v[i]) m = i;
    end
    return m;
  endfunction

  // floor(log2(gmax)) (golden's emax: 2, 0, 2).
  function automatic int format_emax(format_e f);
    return msb_index(max_units(f)) + lsb_exp(f);
  endfunction

  // gmax = max_units * 2^lsb_exp as a binary32 pattern (normal for every format).
  function automatic f32_t gmax_f32(format_e f);
    int unsigned units = max_units(f);
    int          m     = msb_index(units);
    logic [F32ManBits-1:0] man = F32ManBits'(units << (int'(F32ManBits) - m));
    logic [F32ExpBits-1:0] biased = F32ExpBits'(m + lsb_exp(f) + int'(F32Bias));
    return {1'b0, biased, man};
  endfunction

  // mx-ceil: with amax's significand m normalized to [2^23, 2^24) and k0 = floor(log2 amax)
  // - emax, amax <= gmax * 2^k0 exactly when m <= this threshold (gmax's significand).
  function automatic logic [F32SigWidth-1:0] mx_ceil_threshold(format_e f);
    int unsigned units = max_units(f);
    return F32SigWidth'(units << (int'(F32ManBits) - msb_index(units)));
  endfunction

  // nibble_block_scale's latency: combinational with DivStages = 0; otherwise each divider's
  // DivStages registers and the five cuts between the dividers.
  function automatic int unsigned block_scale_latency(int unsigned div_stages);
    return (div_stages == 0) ? 0 : 2 * div_stages + 5;
  endfunction

  // The pipelined quantizer (DivStages > 0) also cuts its element stage after the multiply.
  function automatic int unsigned elem_quant_cut(int unsigned div_stages);
    return (div_stages == 0) ? 0 : 1;
  endfunction

  // Timing (rtl/README.md). nibble_quantizer: a block with valid_i in cycle t gives its codes
  // in cycle t + QuantLatency with its dividers combinational (DivStages = 0, the default),
  // in cycle t + QuantPipeLatency when it is built with DivStages = QuantPipeDivStages, the
  // pipelined quantizer of the clock target (docs/results/area-energy.md). nibble_rht16: a
  // group in cycle t is out in cycle t + RhtLatency. All are public: the Verilated models'
  // package class carries them, and the quantizer and RHT tests check arrival against them.
  localparam int unsigned QuantLatency /*verilator public*/ = 3;
  localparam int unsigned QuantPipeDivStages /*verilator public*/ = 5;
  localparam int unsigned QuantPipeLatency /*verilator public*/ =
      QuantLatency + block_scale_latency(QuantPipeDivStages) + elem_quant_cut(QuantPipeDivStages);
  localparam int unsigned RhtLatency /*verilator public*/ = 5;

endpackage
