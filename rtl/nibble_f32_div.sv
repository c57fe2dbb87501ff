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
// Latency: Stages cycles. With Stages = 0 (the default) it is purely combinational: the
// QuotBits subtract-and-select steps are unrolled and the quantizer registers around it.
// With Stages > 0 the steps are cut into Stages + 1 segments of near-equal delay (the
// normalization rides in the first; the rounding in the last, which holds RoundSteps fewer
// steps) with a register between segments holding the partial remainder, the quotient bits
// so far, the divisor and the result's sign, exponent and class: a quotient presented with
// valid_i in cycle t is on f32_o in cycle t + Stages, one division per cycle (rtl/README.md,
// Clock target in docs/results/area-energy.md).
module nibble_f32_div
  import nibble_f32_pkg::*;
#(
  parameter int unsigned Stages = 0
) (
  input  logic clk_i,    // read only with Stages > 0
  input  logic rst_ni,
  input  logic valid_i,
  input  f32_t a_i,      // dividend
  input  f32_t b_i,      // divisor
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

  localparam int unsigned Segments = Stages + 1;
  // The rounding after the last step costs about RoundSteps steps of delay, so the steps are
  // spread over QuotBits + RoundSteps slots and the last segment holds that many fewer.
  localparam int unsigned RoundSteps = (Stages > 0) ? 3 : 0;
  localparam int unsigned Slots = QuotBits + RoundSteps;
  // The first step of segment s: its share of the slots, the slots past QuotBits empty.
  function automatic int unsigned segment_start(int unsigned s);
    return (s * Slots / Segments < QuotBits) ? s * Slots / Segments : QuotBits;
  endfunction
  // The result's class, decided from the operands alone (IEEE special cases above).
  localparam logic [1:0] ClassQuotient = 2'd0, ClassNaN = 2'd1, ClassInf = 2'd2, ClassZero = 2'd3;
  // One segment's state: class, sign, exponent, partial remainder, divisor, quotient bits.
  localparam int unsigned StateWidth = 2 + 1 + ExpWidth + RemWidth + F32SigWidth + QuotBits;

  logic                       neg, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [1:0]                 result_class;
  logic [F32SigWidth-1:0]     sig_a, sig_b, norm_a, norm_b;
  logic [LzWidth-1:0]         lz_a, lz_b;
  logic signed [ExpWidth-1:0] exp_a, exp_b, quot_exp;

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
    if (a_nan || b_nan || (a_zero && b_zero) || (a_inf && b_inf)) begin
      result_class = ClassNaN;
    end else if (a_inf || b_zero) begin
      result_class = ClassInf;
    end else if (a_zero || b_inf) begin
      result_class = ClassZero;
    end else begin
      result_class = ClassQuotient;
    end
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

  // Segment s reads seg_state[s] (the operands' for s = 0, a register's after) and leaves
  // seg_state[s + 1] through its register, the last one final_state. Restoring division of
  // norm_a * 2^QuotFrac by norm_b, one quotient bit per step, most significant first: the
  // dividend's bits below norm_a are zeros.
  logic [StateWidth-1:0] seg_state [Segments];
  logic                  seg_valid [Segments];
  logic [StateWidth-1:0] final_state;
  logic                  final_valid;

  if (Stages == 0) begin : gen_combinational
    logic unused_clk;
    assign unused_clk = clk_i ^ rst_ni;
  end

  assign seg_state[0] = {result_class, neg, quot_exp, RemWidth'(norm_a), norm_b, QuotBits'(0)};
  assign seg_valid[0] = valid_i;

  for (genvar s = 0; s < Segments; s++) begin : gen_segment
    // Steps First .. Last - 1 of QuotBits (step j decides quotient bit QuotBits - 1 - j).
    localparam int unsigned First = segment_start(s);
    localparam int unsigned Last  = segment_start(s + 1);

    logic [1:0]                 cls;
    logic                       sign;
    logic signed [ExpWidth-1:0] exp;
    logic [RemWidth-1:0]        rem_in, rem;
    logic [F32SigWidth-1:0]     divisor;
    logic [QuotBits-1:0]        quot_in, quot;
    logic [StateWidth-1:0]      state_out;

    assign {cls, sign, exp, rem_in, divisor, quot_in} = seg_state[s];

    always_comb begin
      rem  = rem_in;
      quot = quot_in;
      for (int j = First; j < Last; j++) begin
        if (rem >= RemWidth'(divisor)) begin
          quot[QuotBits-1-j] = 1'b1;
          rem = rem - RemWidth'(divisor);
        end
        if (j < QuotBits - 1) rem = rem << 1;
      end
    end

    assign state_out = {cls, sign, exp, rem, divisor, quot};

    if (s < Segments - 1) begin : gen_register
      nibble_pipe #(
        .Width(StateWidth),
        .Depth(1)
      ) u_register (
        .clk_i,
        .rst_ni,
        .valid_i(seg_valid[s]),
        .d_i    (state_out),
        .valid_o(seg_valid[s+1]),
        .q_o    (seg_state[s+1])
      );
    end else begin : gen_last
      assign final_valid = seg_valid[s];
      assign final_state = state_out;
    end
  end

  logic [1:0]                 out_class;
  logic                       out_neg, sticky, unused_valid;
  logic signed [ExpWidth-1:0] out_exp;
  logic [RemWidth-1:0]        rem;
  logic [F32SigWidth-1:0]     unused_divisor;
  logic [QuotBits-1:0]        quot;
  f32_t                       rounded;

  assign {out_class, out_neg, out_exp, rem, unused_divisor, quot} = final_state;
  assign sticky       = rem != '0;
  assign unused_valid = final_valid;

  nibble_f32_round #(
    .MagWidth(QuotBits + 1),
    .ExpWidth(ExpWidth)
  ) u_round (
    .neg_i(out_neg),
    .mag_i({quot, sticky}),
    .exp_i(out_exp),
    .f32_o(rounded)
  );

  always_comb begin
    if (out_class == ClassNaN) begin
      f32_o = F32QuietNaN;
    end else if (out_class == ClassInf) begin
      f32_o = {out_neg, F32PosInf[F32Width-2:0]};
    end else if (out_class == ClassZero) begin
      f32_o = {out_neg, {(F32Width-1){1'b0}}};
    end else begin
      f32_o = rounded;
    end
  end

endmodule
