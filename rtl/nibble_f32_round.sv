// Exact quantity to binary32: the one rounding of the datapath.
//
// f32_o is the binary32 nearest to (-1)^neg_i * mag_i * 2^exp_i, ties to even, subnormals
// kept, overflow to +-Inf; a zero magnitude gives a zero of sign neg_i. It is the RTL twin
// of golden's nibble::round_to_f32 (golden/src/fp32.cpp) and follows the same steps:
//   top     = msb(mag) + exp             the value lies in [2^top, 2^(top+1))
//   quantum = max(top - 23, -149)        exponent of the result's LSB
//   keep    = mag >> (quantum - exp)     with the round bit and a sticky bit below it
// then {biased exponent, keep} + round-up, so a carry out of the significand moves into the
// exponent (and into +-Inf) by itself. Purely combinational.
module nibble_f32_round import nibble_f32_pkg::*; #(
  parameter int unsigned MagWidth = 48,  // width of the exact magnitude
  parameter int unsigned ExpWidth = 10   // width of the signed exponent of its LSB
) (
  input  logic                       neg_i,
  input  logic [MagWidth-1:0]        mag_i,
  input  logic signed [ExpWidth-1:0] exp_i,
  output f32_t                       f32_o
);

  // Internal exponent arithmetic holds exp_i + MagWidth and the binary32 constants (whose
  // largest, -149 - 23, needs 9 bits and a sign).
  localparam int unsigned MsbWidth = (MagWidth > 1) ? $clog2(MagWidth) : 1;
  localparam int unsigned IntWidthMin = (ExpWidth > MsbWidth + 1) ? ExpWidth : MsbWidth + 1;
  localparam int unsigned IntWidth = 2 + ((IntWidthMin > 10) ? IntWidthMin : 10);
  // The magnitude with room for the 24-bit significand plus a round bit below its LSB.
  localparam int unsigned ExtWidth = MagWidth + F32SigWidth;

  localparam logic signed [IntWidth-1:0] MinQuantum = IntWidth'(F32LsbExpMin);     // -149
  localparam logic signed [IntWidth-1:0] SigMsb     = IntWidth'(F32ManBits);       // 23
  localparam logic signed [IntWidth-1:0] Bias       = IntWidth'(F32Bias);          // 127
  localparam logic signed [IntWidth-1:0] MaxBiased  = IntWidth'((1 << F32ExpBits) - 1);
  localparam logic signed [IntWidth-1:0] MaxShift   = IntWidth'(ExtWidth);

  logic [MsbWidth-1:0]        msb;
  logic signed [IntWidth-1:0] top, quantum, shift, biased;
  logic [ExtWidth-1:0]        ext, shifted;
  logic [F32SigWidth-1:0]     keep;
  logic                       round_bit, sticky, round_up, normal;
  logic [F32Width-2:0]        abs_rounded;

  // Index of the leading one (0 for a zero magnitude, which is handled separately).
  always_comb begin
    msb = '0;
    for (int unsigned i = 0; i < MagWidth; i++) begin
      if (mag_i[i]) msb = MsbWidth'(i);
    end
  end

  always_comb begin
    top     = IntWidth'(exp_i) + IntWidth'(msb);
    quantum = (top - SigMsb < MinQuantum) ? MinQuantum : top - SigMsb;
    // ext = mag * 2^24; shifting it right by (quantum - exp) + 23 leaves keep * 2 + round bit.
    // The shift is at least 0 (the significand has room for every magnitude bit when the
    // result is exact) and saturates once every bit has gone to the sticky bit.
    shift   = quantum - IntWidth'(exp_i) + SigMsb;
    if (shift > MaxShift) shift = MaxShift;
    ext     = {mag_i, {F32SigWidth{1'b0}}};
    shifted = ext >> shift;
    sticky  = (shifted << shift) != ext;
  end

  // Above bit F32SigWidth the shifted magnitude is zero by construction of quantum.
  logic unused_shifted_high;
  assign unused_shifted_high = ^shifted[ExtWidth-1:F32SigWidth+1];

  always_comb begin
    keep      = shifted[F32SigWidth:1];
    round_bit = shifted[0];
    round_up  = round_bit && (sticky || keep[0]);
    normal    = keep[F32SigWidth-1];
    biased    = normal ? quantum + SigMsb + Bias : '0;
    // The significand's hidden bit is dropped; a carry out of the fraction increments the
    // exponent field, which is the correctly rounded next binade (or +-Inf from 254).
    abs_rounded = {biased[F32ExpBits-1:0], keep[F32ManBits-1:0]} + (F32Width-1)'(round_up);
    if (mag_i == '0) begin
      f32_o = {neg_i, {(F32Width-1){1'b0}}};
    end else if (biased >= MaxBiased) begin
      f32_o = {neg_i, F32PosInf[F32Width-2:0]};
    end else begin
      f32_o = {neg_i, abs_rounded};
    end
  end

  logic unused_biased_high;
  assign unused_biased_high = ^biased[IntWidth-1:F32ExpBits];

endmodule
