// binary32 division, correctly rounded (round-to-nearest-even), subnormals kept, overflow
// to +-Inf.
//
// Both significands are normalized to [2^23, 2^24) (subnormals shifted up, their exponent
// lowered to match), so their quotient lies in (1/2, 2). A restoring divider produces
// QuotBits = 27 quotient bits q = floor(ma * 2^26 / mb), q in [2^25, 2^27): the 24 bits of
// the result plus at least two more, so the round bit is a quotient bit and a non-zero
// remainder only ever acts as the sticky bit, appended below q. The jammed quotient
// {q, sticky} and the exact quotient then lie strictly inside the same interval between
// consecutive multiples of the half-ulp, so nibble_f32_round rounds them alike (also for
// subnormal results, whose rounding position is higher still).
//
// IEEE special cases: NaN / x, x / NaN, 0 / 0, Inf / Inf -> NaN (always the canonical
// F32QuietNaN); x / 0 (x != 0) and Inf / finite -> +-Inf; finite / Inf and 0 / x -> +-0;
// the sign is the xor of the operands' signs.
//
// Latency: purely combinational (the QuotBits subtract-and-select steps are unrolled); the
// quantizer registers around it (rtl/README.md).
module nibble_f32_div import nibble_f32_pkg::*; (
  input  f32_t a_i,  // dividend
  input  f32_t b_i,  // divisor
  output f32_t f32_o
);

  localparam int unsigned QuotFrac = F32SigWidth + 2;        // 26: quotient bits below 2^0
  localparam int unsigned QuotBits = QuotFrac + 1;           // 27: q < 2^27
  localparam int unsigned RemWidth = F32SigWidth + 1;        // a partial remainder < 2 * mb
  localparam int unsigned LzWidth  = $clog2(F32SigWidth);
  // Exponents: a normalized operand is m * 2^e with e in [-149 - 23, 104]; the quotient's
  // LSB exponent ea - eb - QuotFrac - 1 lies in [-304, 250]: 10 signed bits.
  localparam int unsigned ExpWidth = 10;
  localparam logic signed [ExpWidth-1:0] LsbOffset = ExpWidth'(F32Bias + F32ManBits);

  logic                       neg, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [F32SigWidth-1:0]     sig_a, sig_b, norm_a, norm_b;
  logic [LzWidth-1:0]         lz_a, lz_b;
  logic signed [ExpWidth-1:0] exp_a, exp_b, quot_exp;
  logic [RemWidth-1:0]        rem;
  logic [QuotBits-1:0]        quot;
  logic                       sticky;
  f32_t                       rounded;

  // Leading zeros of a significand (0 for normals; zeros are handled as special cases).
  function automatic logic [LzWidth-1:0] leading_zeros(logic [F32SigWidth-1:0] sig);
    logic [LzWidth-1:0] lz = '0;
    for (int i = 0; i < int'(F32SigWidth); i++) begin
      if (sig[i]) lz = LzWidth'(int'(F32SigWidth) - 1 - i);
    end
    return lz;
  endfunction

  always_comb begin
    neg    = a_i[F32Width-1] ^ b_i[F32Width-1];
    a_nan  = f32_is_nan(a_i[F32Width-2:0]);
    b_nan  = f32_is_nan(b_i[F32Width-2:0]);
    a_inf  = f32_is_inf(a_i[F32Width-2:0]);
    b_inf  = f32_is_inf(b_i[F32Width-2:0]);
    a_zero = a_i[F32Width-2:0] == '0;
    b_zero = b_i[F32Width-2:0] == '0;
    sig_a  = f32_significand(a_i[F32Width-2:0]);
    sig_b  = f32_significand(b_i[F32Width-2:0]);
    lz_a   = leading_zeros(sig_a);
    lz_b   = leading_zeros(sig_b);
    norm_a = sig_a << lz_a;
    norm_b = sig_b << lz_b;
    exp_a  = ExpWidth'(f32_scale_exp(a_i[F32Width-2-:F32ExpBits])) - LsbOffset -
             ExpWidth'(lz_a);
    exp_b  = ExpWidth'(f32_scale_exp(b_i[F32Width-2-:F32ExpBits])) - LsbOffset -
             ExpWidth'(lz_b);
    quot_exp = exp_a - exp_b - ExpWidth'(QuotFrac) - ExpWidth'(1);
  end

  // Restoring division of norm_a * 2^QuotFrac by norm_b, one quotient bit per step, most
  // significant first: the dividend's bits below norm_a are zeros.
  always_comb begin
    rem  = RemWidth'(norm_a);
    quot = '0;
    for (int i = QuotBits - 1; i >= 0; i--) begin
      if (rem >= RemWidth'(norm_b)) begin
        quot[i] = 1'b1;
        rem     = rem - RemWidth'(norm_b);
      end
      if (i > 0) rem = rem << 1;
    end
    sticky = rem != '0;
  end

  nibble_f32_round #(
    .MagWidth(QuotBits + 1),
    .ExpWidth(ExpWidth)
  ) u_round (
    .neg_i(neg),
    .mag_i({quot, sticky}),
    .exp_i(quot_exp),
    .f32_o(rounded)
  );

  always_comb begin
    if (a_nan || b_nan || (a_zero && b_zero) || (a_inf && b_inf)) begin
      f32_o = F32QuietNaN;
    end else if (a_inf || b_zero) begin
      f32_o = {neg, F32PosInf[F32Width-2:0]};
    end else if (a_zero || b_inf) begin
      f32_o = {neg, {(F32Width-1){1'b0}}};
    end else begin
      f32_o = rounded;
    end
  end

endmodule
