// binary32 multiplication, round-to-nearest-even, subnormals kept, overflow to +-Inf.
//
// Decode both operands to sign, 24-bit significand and exponent, multiply the significands
// exactly (48 bits) and round once in nibble_f32_round. IEEE special cases: NaN * x,
// Inf * 0 -> NaN (always the canonical F32QuietNaN); Inf * finite non-zero -> +-Inf; a zero
// product keeps the sign xor. Purely combinational.
module nibble_f32_mul import nibble_f32_pkg::*; (
  input  f32_t a_i,
  input  f32_t b_i,
  output f32_t f32_o
);

  localparam int unsigned ProdWidth = 2 * F32SigWidth;
  // The product's LSB exponent lies in [2 * -149, 2 * (254 - 150)]: 10 signed bits.
  localparam int unsigned ExpWidth  = 10;
  localparam logic signed [ExpWidth-1:0] LsbOffset = ExpWidth'(F32Bias + F32ManBits);

  logic                       neg, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [ProdWidth-1:0]       prod;
  logic signed [ExpWidth-1:0] prod_exp;
  f32_t                       rounded;

  always_comb begin
    neg    = a_i[F32Width-1] ^ b_i[F32Width-1];
    a_nan  = f32_is_nan(a_i[F32Width-2:0]);
    b_nan  = f32_is_nan(b_i[F32Width-2:0]);
    a_inf  = f32_is_inf(a_i[F32Width-2:0]);
    b_inf  = f32_is_inf(b_i[F32Width-2:0]);
    a_zero = a_i[F32Width-2:0] == '0;
    b_zero = b_i[F32Width-2:0] == '0;
    prod   = ProdWidth'(f32_significand(a_i[F32Width-2:0])) *
             ProdWidth'(f32_significand(b_i[F32Width-2:0]));
    prod_exp = ExpWidth'(f32_scale_exp(a_i[F32Width-2-:F32ExpBits])) +
               ExpWidth'(f32_scale_exp(b_i[F32Width-2-:F32ExpBits])) - 2 * LsbOffset;
  end

  nibble_f32_round #(
    .MagWidth(ProdWidth),
    .ExpWidth(ExpWidth)
  ) u_round (
    .neg_i(neg),
    .mag_i(prod),
    .exp_i(prod_exp),
    .f32_o(rounded)
  );

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) begin
      f32_o = F32QuietNaN;
    end else if (a_inf || b_inf) begin
      f32_o = {neg, F32PosInf[F32Width-2:0]};
    end else begin
      f32_o = rounded;
    end
  end

endmodule
