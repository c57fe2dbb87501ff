// nibble_golden_dpi: the golden model's C API imported into SystemVerilog (DPI-C).
//
// Link the testbench with the C API library (libnibble_golden_c.so; `pkg-config --libs
// nibble-golden`). Every function returns the C API's status (NIBBLE_OK = 0); on a
// non-zero status nibble_last_error() says why and the outputs are unchanged.
// Floats travel as their binary32 bit patterns. Blocks are 16 elements: x as
// bit [15:0][31:0] (element i in bits 32i+31..32i), codes as bit [15:0][3:0] (code i in
// bits 4i+3..4i), the layout of the RTL's packed ports. Enum values are golden's
// (docs/golden-c-api.md); they match nibble_pkg::format_e, scale_format_e and
// nibble_quant_pkg::scale_mode_e, rounding_e. The constants carry a Nibble prefix so that
// they do not collide with those packages' enum items when both are imported.
package nibble_golden_dpi;

  localparam int NibbleOk = 0;

  localparam int NibbleFmtE2M1 = 0;
  localparam int NibbleFmtE1M2 = 1;
  localparam int NibbleFmtInt4 = 2;
  localparam int NibbleScaleFmtE4M3 = 0;
  localparam int NibbleScaleFmtUE8M0 = 1;
  localparam int NibbleScaleFmtFP32 = 2;
  localparam int NibbleScaleModeFP32 = 0;
  localparam int NibbleScaleModeNVFP4 = 1;
  localparam int NibbleScaleModeMXFloor = 2;
  localparam int NibbleScaleModeMXCeil = 3;
  localparam int NibbleRoundNearestEven = 0;
  localparam int NibbleRoundStochastic = 1;
  // The quantizer's policies (C API version 2; docs/numerics.md section 3).
  localparam int NibbleZeroPositive = 0;
  localparam int NibbleZeroSigned = 1;
  localparam int NibbleNonFiniteFinite = 0;
  localparam int NibbleNonFinitePropagate = 1;

  // The C API's version (NIBBLE_GOLDEN_API_VERSION of the linked library).
  import "DPI-C" function int nibble_golden_api_version();
  // The calling thread's message for its last call ("" after a success).
  import "DPI-C" function string nibble_last_error();

  // Golden's names of the enum values ("e2m1", "ue8m0", "mx-floor", "sr"; "" out of range),
  // to check the constants above.
  import "DPI-C" function string nibble_format_name(input int format);
  import "DPI-C" function string nibble_scale_format_name(input int scale_format);
  import "DPI-C" function string nibble_scale_mode_name(input int scale_mode);
  import "DPI-C" function string nibble_rounding_name(input int rounding);
  import "DPI-C" function string nibble_zero_policy_name(input int zero_policy);
  import "DPI-C" function string nibble_nonfinite_policy_name(input int nonfinite_policy);

  // code (0..15) -> the exact value's bit pattern.
  import "DPI-C" function int nibble_dpi_element_decode(
      input int format, input int code, output int unsigned value_bits);
  // value -> code, RNE or stochastic with `random` holding sr_bits (1..8) bits.
  import "DPI-C" function int nibble_dpi_element_encode(
      input int format, input int unsigned value_bits, input int rounding, input int random,
      input int sr_bits, output int code);
  // A 1x16 block quantized as golden quantize() does for a one-block tensor: codes,
  // the block-scale code and the per-tensor level (1.0 unless nvfp4) as bit patterns.
  import "DPI-C" function int nibble_dpi_quantize_block16(
      input int format, input int scale_mode, input int rounding, input int sr_bits,
      input longint unsigned seed, input int unsigned stream, input bit [15:0][31:0] x_bits,
      output bit [15:0][3:0] codes, output int unsigned scale_code,
      output int unsigned tensor_encode_bits, output int unsigned tensor_decode_bits);
  // The same under a zero policy (NibbleZero*) and a non-finite policy (NibbleNonFinite*).
  import "DPI-C" function int nibble_dpi_quantize_block16_with_policy(
      input int format, input int scale_mode, input int rounding, input int sr_bits,
      input int zero, input int nonfinite,
      input longint unsigned seed, input int unsigned stream, input bit [15:0][31:0] x_bits,
      output bit [15:0][3:0] codes, output int unsigned scale_code,
      output int unsigned tensor_encode_bits, output int unsigned tensor_decode_bits);
  // The stochastic-rounding bits golden draws for that block: byte i = element i's bits.
  import "DPI-C" function int nibble_dpi_sr_random16(
      input longint unsigned seed, input int unsigned stream, input int sr_bits,
      output bit [15:0][7:0] random);
  // One 16-lane block step of the dot product: acc_out = fl(acc_in + fl(P * s)).
  import "DPI-C" function int nibble_dpi_block_dot16(
      input int format_a, input int scale_format_a, input bit [15:0][3:0] codes_a,
      input int unsigned scale_a, input int format_b, input int scale_format_b,
      input bit [15:0][3:0] codes_b, input int unsigned scale_b,
      input int unsigned acc_in_bits, output int unsigned acc_out_bits);

endpackage
