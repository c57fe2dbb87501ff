// binary32 addition, round-to-nearest-even, subnormals kept, overflow to +-Inf.
//
// The operands are ordered by magnitude (x >= y); y's significand is aligned to x's with
// GuardBits extra bits below x's LSB, and every bit shifted out further is OR-ed into the
// lowest bit (sticky). The exact (or sticky-jammed) sum is rounded once in nibble_f32_round.
//
// Why three guard bits are enough: if y is shifted by d <= GuardBits nothing is lost and
// the sum is exact. Otherwise x is normal, y_aligned < 2^(23 + GuardBits - d + 1) <= 2^23
// in units of the window's LSB and x >= 2^(23 + GuardBits), so the sum or difference is at
// least 2^(22 + GuardBits): its rounding position is at bit GuardBits - 1 or above, its
// half-ulp at bit 1 or above, and the jammed bit 0 only ever acts as the sticky bit. The
// jammed value and the exact value then lie strictly inside the same interval between
// consecutive multiples of the half-ulp, so they round alike.
//
// IEEE special cases: NaN + x and Inf - Inf -> NaN (always the canonical F32QuietNaN);
// Inf + finite -> that Inf; an exact zero sum is +0 unless both operands are negative
// (x + (-x) = +0, (-0) + (-0) = -0: the rule for round-to-nearest). Purely combinational.
module nibble_f32_add import nibble_f32_pkg::*; (
  input  f32_t a_i,
  input  f32_t b_i,
  output f32_t f32_o
);

  localparam int unsigned GuardBits = 3;
  localparam int unsigned WinWidth  = F32SigWidth + GuardBits;  // the aligned window
  localparam int unsigned SumWidth  = WinWidth + 1;             // with the carry
  // The window's LSB exponent lies in [-149 - 3, 104 - 3]: 10 signed bits.
  localparam int unsigned ExpWidth  = 10;
  localparam logic signed [ExpWidth-1:0] LsbOffset =
      ExpWidth'(F32Bias + F32ManBits + GuardBits);

  f32_t                       x, y;
  logic                       a_nan, b_nan, a_inf, b_inf, subtract;
  logic [F32ExpBits-1:0]      x_exp, y_exp, diff;
  logic [WinWidth-1:0]        x_win, y_full, y_win;
  logic                       y_sticky;
  logic [SumWidth-1:0]        sum;
  logic                       sum_neg;
  logic signed [ExpWidth-1:0] sum_exp;
  f32_t                       rounded;

  always_comb begin
    a_nan = f32_is_nan(a_i[F32Width-2:0]);
    b_nan = f32_is_nan(b_i[F32Width-2:0]);
    a_inf = f32_is_inf(a_i[F32Width-2:0]);
    b_inf = f32_is_inf(b_i[F32Width-2:0]);
    // Magnitude order is the order of the bit patterns without the sign.
    if (a_i[F32Width-2:0] >= b_i[F32Width-2:0]) begin
      x = a_i;
      y = b_i;
    end else begin
      x = b_i;
      y = a_i;
    end
    subtract = x[F32Width-1] ^ y[F32Width-1];
    x_exp    = f32_scale_exp(x[F32Width-2-:F32ExpBits]);
    y_exp    = f32_scale_exp(y[F32Width-2-:F32ExpBits]);
    diff     = x_exp - y_exp;
    x_win    = {f32_significand(x[F32Width-2:0]), {GuardBits{1'b0}}};
    y_full   = {f32_significand(y[F32Width-2:0]), {GuardBits{1'b0}}};
    // A shift of WinWidth or more leaves nothing but the sticky bit.
    y_win    = y_full >> diff;
    y_sticky = (y_win << diff) != y_full;
    y_win[0] = y_win[0] | y_sticky;
    sum      = subtract ? SumWidth'(x_win) - SumWidth'(y_win)
                        : SumWidth'(x_win) + SumWidth'(y_win);
    // A zero sum is exact (a non-zero y never cancels x completely once bits were lost).
    sum_neg  = (sum == '0) ? (a_i[F32Width-1] && b_i[F32Width-1]) : x[F32Width-1];
    sum_exp  = ExpWidth'(x_exp) - LsbOffset;
  end

  nibble_f32_round #(
    .MagWidth(SumWidth),
    .ExpWidth(ExpWidth)
  ) u_round (
    .neg_i(sum_neg),
    .mag_i(sum),
    .exp_i(sum_exp),
    .f32_o(rounded)
  );

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_inf && (a_i[F32Width-1] != b_i[F32Width-1]))) begin
      f32_o = F32QuietNaN;
    end else if (a_inf) begin
      f32_o = a_i;
    end else if (b_inf) begin
      f32_o = b_i;
    end else begin
      f32_o = rounded;
    end
  end

endmodule
