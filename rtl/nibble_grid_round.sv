// A binary32 value onto a magnitude grid: the hardware "cvt", RNE or stochastic.
//
// The grid is k * 2^LsbExp for integers k <= MaxUnits, restricted to multiples of the local
// spacing 2^max(0, floor(log2 k) - ManBits) (docs/numerics.md section 1; an element format's
// grid, or E4M3's for block scales). It is the RTL twin of golden's round_to_grid
// (golden/src/quantize.cpp) and follows its integer steps on v = sig * 2^exp:
//   p       = msb(sig) + exp - LsbExp          floor(log2 |v|) in units
//   p above msb(MaxUnits) + 1                  -> saturate (so does +-Inf)
//   s       = max(0, p - ManBits)              the spacing is 2^s units
//   shift   = LsbExp + s - exp                 k = sig >> shift, the fraction below it
//   RNE: up = fraction > 1/2, or = 1/2 and k odd
//   SR:  up = (first B bits of the fraction) + rand >= 2^B
//   units   = (k + up) << s, saturated to MaxUnits
// The fraction is kept as FracBits = 32 bits: once shift exceeds 32 the fraction is below
// 2^-8 of a spacing (sig < 2^24), so RNE and SR (B <= 8 truncated bits) both round down,
// exactly as golden's (which clamps at 40). shift is never below -ManBits. The sign is
// passed through (a zero keeps it). v must not be NaN. Purely combinational.
module nibble_grid_round import nibble_f32_pkg::*; #(
  parameter int          LsbExp    = -1,
  parameter int unsigned ManBits   = 1,
  parameter int unsigned MaxUnits  = 12,
  parameter int unsigned SrBitsMax = 8,
  localparam int unsigned UnitsWidth  = $clog2(MaxUnits + 1),
  localparam int unsigned SrBitsWidth = $clog2(SrBitsMax + 1)
) (
  input  f32_t                   v_i,
  input  logic                   stochastic_i,  // 0: RNE, 1: SR
  input  logic [SrBitsMax-1:0]   rand_i,        // the element's B random bits (rand_i < 2^B)
  input  logic [SrBitsWidth-1:0] sr_bits_i,     // B, 1..SrBitsMax
  output logic                   neg_o,
  output logic [UnitsWidth-1:0]  units_o
);

  localparam int unsigned FracBits = 32;
  localparam int unsigned MaxMsb   = $clog2(MaxUnits + 1) - 1;  // msb(MaxUnits)
  // k = sig << -shift (at most ManBits) or sig >> shift, plus the round-up carry.
  localparam int unsigned KWidth   = F32SigWidth + ManBits + 1;
  // (k + up) << s before saturation: below 2^(MaxMsb + 2), kept with a guard bit.
  localparam int unsigned WideWidth = MaxMsb + 3;
  localparam int unsigned IntWidth  = 12;  // p, s, shift: |exp| <= 149 plus small offsets
  localparam int unsigned MsbWidth  = $clog2(F32SigWidth);
  localparam logic signed [IntWidth-1:0] Lsb      = IntWidth'(LsbExp);
  localparam logic signed [IntWidth-1:0] PMax     = IntWidth'(MaxMsb + 1);
  localparam logic signed [IntWidth-1:0] Man      = IntWidth'(ManBits);
  localparam logic signed [IntWidth-1:0] FracMax  = IntWidth'(FracBits);
  localparam logic signed [IntWidth-1:0] ExpOffset = IntWidth'(F32Bias + F32ManBits);

  logic                            inf, saturate, up;
  logic [F32SigWidth-1:0]          sig;
  logic [MsbWidth-1:0]             msb;
  logic signed [IntWidth-1:0]      exp, p, s, shift;
  logic [KWidth-1:0]               k;
  logic [F32SigWidth+FracBits-1:0] ext;
  logic [FracBits-1:0]             frac;
  logic [SrBitsMax:0]              frac_top, sr_sum, sr_one;
  logic [WideWidth-1:0]            wide;

  assign sig = f32_significand(v_i[F32Width-2:0]);

  always_comb begin
    msb = '0;
    for (int unsigned i = 0; i < F32SigWidth; i++) begin
      if (sig[i]) msb = MsbWidth'(i);
    end
  end

  always_comb begin
    neg_o    = v_i[F32Width-1];
    inf      = f32_is_inf(v_i[F32Width-2:0]);
    exp      = IntWidth'(f32_scale_exp(v_i[F32Width-2-:F32ExpBits])) - ExpOffset;
    p        = IntWidth'(msb) + exp - Lsb;
    s        = (p > Man) ? p - Man : '0;
    shift    = Lsb + s - exp;
    k        = '0;
    frac     = '0;
    ext      = '0;
    if (shift <= 0) begin
      k = KWidth'(sig) << (-shift);
    end else if (shift <= FracMax) begin
      ext  = {sig, {FracBits{1'b0}}} >> shift;
      k    = KWidth'(ext[F32SigWidth+FracBits-1:FracBits]);
      frac = ext[FracBits-1:0];
    end
    // RNE: the fraction against one half.
    // SR: its top B bits plus the random bits, carry out at 2^B.
    frac_top = (SrBitsMax + 1)'(frac[FracBits-1-:SrBitsMax]) >>
               (SrBitsWidth'(SrBitsMax) - sr_bits_i);
    sr_sum   = frac_top + (SrBitsMax + 1)'(rand_i);
    sr_one   = (SrBitsMax + 1)'(1) << sr_bits_i;
    if (stochastic_i) begin
      up = sr_sum >= sr_one;
    end else begin
      up = (frac > {1'b1, {(FracBits-1){1'b0}}}) ||
           ((frac == {1'b1, {(FracBits-1){1'b0}}}) && k[0]);
    end
    wide     = WideWidth'(k + KWidth'(up)) << s;
    saturate = inf || (sig != '0 && p > PMax) || (wide >= WideWidth'(MaxUnits));
    if (sig == '0 && !inf) begin
      units_o = '0;
    end else if (saturate) begin
      units_o = UnitsWidth'(MaxUnits);
    end else begin
      units_o = UnitsWidth'(wide);
    end
  end

endmodule
