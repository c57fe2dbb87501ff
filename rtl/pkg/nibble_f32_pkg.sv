// IEEE-754 binary32, as the tensor core's arithmetic units see it.
//
// The binary32 primitives (nibble_f32_round, nibble_f32_mul, nibble_f32_add) import only
// this package, so the quantizer and RHT units can reuse them without the element formats.
// Every implementation-defined choice of those units is stated here:
//   - rounding is round-to-nearest-even only, subnormals are kept (no flush to zero),
//     overflow goes to +-Inf (docs/numerics.md, "fl");
//   - a NaN result is always the canonical quiet NaN F32QuietNaN (payloads are not
//     propagated; golden's host float operations may return another NaN pattern, so
//     tests compare NaN results by NaN-ness).
package nibble_f32_pkg;

  localparam int unsigned F32Width    = 32;
  localparam int unsigned F32ExpBits  = 8;
  localparam int unsigned F32ManBits  = 23;
  localparam int unsigned F32Bias     = 127;
  localparam int unsigned F32SigWidth = F32ManBits + 1;  // with the hidden bit

  // Exponent of the smallest quantum, the LSB of subnormals and of the lowest normal binade.
  localparam int F32LsbExpMin = 1 - int'(F32Bias) - int'(F32ManBits);  // -149

  localparam logic [F32Width-1:0] F32QuietNaN = 32'h7FC0_0000;
  localparam logic [F32Width-1:0] F32PosInf   = 32'h7F80_0000;
  localparam logic [F32Width-1:0] F32PosZero  = 32'h0000_0000;

  typedef logic [F32Width-1:0] f32_t;

  // A binary32 without its sign: the class and value of a magnitude.
  typedef logic [F32Width-2:0] f32_abs_t;

  function automatic logic f32_is_nan(f32_abs_t x);
    return (&x[F32Width-2-:F32ExpBits]) && (|x[F32ManBits-1:0]);
  endfunction

  function automatic logic f32_is_inf(f32_abs_t x);
    return (&x[F32Width-2-:F32ExpBits]) && !(|x[F32ManBits-1:0]);
  endfunction

  // The significand with its hidden bit (no hidden bit for subnormals and zeros).
  function automatic logic [F32SigWidth-1:0] f32_significand(f32_abs_t x);
    return {|x[F32Width-2-:F32ExpBits], x[F32ManBits-1:0]};
  endfunction

  // The biased exponent that scales the significand: subnormals share field value 1, so a
  // finite value is f32_significand * 2^(f32_scale_exp - Bias - ManBits).
  function automatic logic [F32ExpBits-1:0] f32_scale_exp(logic [F32ExpBits-1:0] biased);
    return (|biased) ? biased : F32ExpBits'(1);
  endfunction

endpackage
