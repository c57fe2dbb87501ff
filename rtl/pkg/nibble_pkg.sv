// Nibble's element formats and block-scale formats, as data.
//
// This package mirrors golden/include/nibble/formats.h: kFormatTable and kScaleFormatTable
// are the tables below, row for row, and every width the RTL uses is derived from them by
// the functions at the end. tests/rtl/pkg_lane_test.cpp reads this table through
// tests/rtl/tb_lanes.sv and checks it equal to golden's. Adding a format is a new enum
// value and a new table row here (and in golden): no module hard-codes a format.
package nibble_pkg;

  import nibble_f32_pkg::*;

  // --------------------------------------------------------------------------------------
  // Element formats
  // --------------------------------------------------------------------------------------
  localparam int unsigned NumFormats      = 3;
  localparam int unsigned FormatSelWidth  = 2;
  localparam int unsigned CodeWidth       = 4;

  // Values equal golden's nibble::Format.
  typedef enum logic [FormatSelWidth-1:0] {
    FmtE2M1 = 2'd0,
    FmtE1M2 = 2'd1,
    FmtInt4 = 2'd2
  } format_e;

  typedef enum logic [0:0] {
    EncSignMagnitudeFloat = 1'b0,  // sign | exponent (bias) | mantissa, subnormal at exponent 0
    EncTwosComplement     = 1'b1   // integer
  } encoding_e;

  typedef struct packed {
    encoding_e   encoding;
    int unsigned exp_bits;  // minifloat exponent bits (0 for integers)
    int unsigned man_bits;  // mantissa bits; for integers the magnitude bits below the sign
    int unsigned bias;      // minifloat exponent bias (0 for integers)
  } format_info_t;

  // THE table: golden's kFormatTable.
  localparam format_info_t [NumFormats-1:0] FormatTable = '{
    0: '{encoding: EncSignMagnitudeFloat, exp_bits: 2, man_bits: 1, bias: 1},
    1: '{encoding: EncSignMagnitudeFloat, exp_bits: 1, man_bits: 2, bias: 1},
    2: '{encoding: EncTwosComplement,     exp_bits: 0, man_bits: 3, bias: 0}
  };

  // A set of formats a unit is built for: bit f is format_e'(f). Disabled formats are tied
  // off at elaboration; the common fixed point is derived from the enabled ones only.
  typedef logic [NumFormats-1:0] format_mask_t;

  localparam format_mask_t FormatMaskE2M1     = 3'b001;
  localparam format_mask_t FormatMaskE1M2     = 3'b010;
  localparam format_mask_t FormatMaskInt4     = 3'b100;
  localparam format_mask_t FormatMaskMinifloat = 3'b011;
  localparam format_mask_t FormatMaskAll      = 3'b111;

  // --------------------------------------------------------------------------------------
  // Scale formats
  // --------------------------------------------------------------------------------------
  localparam int unsigned NumScaleFormats     = 3;
  localparam int unsigned ScaleFormatSelWidth = 2;
  localparam int unsigned ScaleCodeWidth      = F32Width;  // the widest scale code

  // Values equal golden's nibble::ScaleFormat.
  typedef enum logic [ScaleFormatSelWidth-1:0] {
    ScaleE4M3  = 2'd0,
    ScaleUE8M0 = 2'd1,
    ScaleFP32  = 2'd2
  } scale_format_e;

  typedef enum logic [1:0] {
    ScaleEncMinifloat  = 2'd0,  // sign | exponent | mantissa with subnormals; NaN = nan_code
    ScaleEncPowerOfTwo = 2'd1,  // unsigned exponent only: 2^(e - bias); NaN = nan_code
    ScaleEncBinary32   = 2'd2   // the IEEE binary32 bit pattern itself
  } scale_encoding_e;

  typedef struct packed {
    scale_encoding_e encoding;
    int unsigned     bits;
    int unsigned     exp_bits;
    int unsigned     man_bits;
    int unsigned     bias;
    logic [31:0]     nan_code;  // the code a block holding NaN/Inf receives
  } scale_format_info_t;

  // golden's kScaleFormatTable (the encoding column is implied there by each row's name).
  localparam scale_format_info_t [NumScaleFormats-1:0] ScaleFormatTable = '{
    0: '{encoding: ScaleEncMinifloat,  bits: 8,  exp_bits: 4, man_bits: 3,  bias: 7,
         nan_code: 32'h0000_007F},
    1: '{encoding: ScaleEncPowerOfTwo, bits: 8,  exp_bits: 8, man_bits: 0,  bias: 127,
         nan_code: 32'h0000_00FF},
    2: '{encoding: ScaleEncBinary32,   bits: 32, exp_bits: 8, man_bits: 23, bias: 127,
         nan_code: 32'h7FC0_0000}
  };

  // --------------------------------------------------------------------------------------
  // Derived facts (golden formats.h: lsb_exp, max_units, max_decode_units)
  // --------------------------------------------------------------------------------------
  function automatic int maximum(int a, int b);
    return (a > b) ? a : b;
  endfunction

  function automatic int minimum(int a, int b);
    return (a < b) ? a : b;
  endfunction

  // Exponent of one unit: (1 - bias) - man_bits for minifloats, 0 for integers.
  function automatic int lsb_exp(format_e f);
    if (FormatTable[f].encoding == EncTwosComplement) return 0;
    return (1 - int'(FormatTable[f].bias)) - int'(FormatTable[f].man_bits);
  endfunction

  // Largest magnitude a quantizer emits, in units (12, 7, 7).
  function automatic int unsigned max_units(format_e f);
    if (FormatTable[f].encoding == EncTwosComplement) return (1 << FormatTable[f].man_bits) - 1;
    return ((2 << FormatTable[f].man_bits) - 1) << ((1 << FormatTable[f].exp_bits) - 2);
  endfunction

  // Largest magnitude any code decodes to, in units (12, 7, 8: INT4's -8).
  function automatic int unsigned max_decode_units(format_e f);
    if (FormatTable[f].encoding == EncTwosComplement) return max_units(f) + 1;
    return max_units(f);
  endfunction

  function automatic logic format_enabled(format_mask_t mask, format_e f);
    return (int'(f) < int'(NumFormats)) && mask[f];
  endfunction

  // The common fixed point of a set of formats: its unit is the finest enabled unit.
  function automatic int unit_exp(format_mask_t mask);
    int u = 0;
    logic first = 1'b1;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (mask[f]) begin
        u = first ? lsb_exp(format_e'(f)) : minimum(u, lsb_exp(format_e'(f)));
        first = 1'b0;
      end
    end
    return u;
  endfunction

  // Largest decoded magnitude of any enabled format, in common units
  // (all three formats: E2M1 24, E1M2 7, INT4 32 units of 2^-2).
  function automatic int unsigned common_max_units(format_mask_t mask);
    int unsigned m = 0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (mask[f]) begin
        m = unsigned'(maximum(int'(m), int'(max_decode_units(format_e'(f))
                                            << (lsb_exp(format_e'(f)) - unit_exp(mask)))));
      end
    end
    return m;
  endfunction

  // Width of a decoded magnitude in common units.
  function automatic int unsigned common_mag_width(format_mask_t mask);
    return unsigned'($clog2(common_max_units(mask) + 1));
  endfunction

  // Width of one signed lane product (units 2^(2 * unit_exp)).
  function automatic int unsigned product_width(format_mask_t mask);
    return unsigned'($clog2(common_max_units(mask) * common_max_units(mask) + 1)) + 1;
  endfunction

  // Width of the exact signed sum of `lanes` lane products (a binary adder tree grows one
  // bit per level).
  function automatic int unsigned partial_sum_width(format_mask_t mask, int unsigned lanes);
    return product_width(mask) + unsigned'($clog2(lanes));
  endfunction

  // --------------------------------------------------------------------------------------
  // Timing of the datapath units (documented in rtl/README.md)
  // --------------------------------------------------------------------------------------
  // nibble_dpu: a block presented with valid_i in cycle t is in acc_o in cycle t + DpuLatency.
  localparam int unsigned DpuLatency = 3;

endpackage
