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

  // A set of scale formats a unit decodes: bit f is scale_format_e'(f). The decoder of a
  // disabled scale format is not built (its select decodes to +0).
  typedef logic [NumScaleFormats-1:0] scale_format_mask_t;

  localparam scale_format_mask_t ScaleFormatMaskAll    = 3'b111;
  localparam scale_format_mask_t ScaleFormatMaskNarrow = 3'b011;  // E4M3 + UE8M0 (NVFP4, MX)
  localparam scale_format_mask_t ScaleFormatMaskFP32   = 3'b100;  // binary32 (the UFP4 paper's)

  function automatic logic scale_format_enabled(scale_format_mask_t mask, scale_format_e f);
    return (int'(f) < int'(NumScaleFormats)) && mask[f];
  endfunction

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
  // Lane designs: how a lane represents its two elements and their product
  // --------------------------------------------------------------------------------------
  // Every design computes the same exact block sum P * 2^(block LSB exponent) (golden's
  // block_partial_sum, then block_product's sf.exp + lsb_exp(fa) + lsb_exp(fb)); they differ
  // in where the units' exponents go and how wide the lane datapath is. Mirrored by
  // kLaneDesignTable in power/include/nibble/power/lane_design.h (checked equal by
  // tests/rtl/pkg_lane_test.cpp). A DPU, tile or core takes one as its LaneDesign parameter.
  localparam int unsigned NumLaneDesigns     = 5;
  localparam int unsigned LaneDesignSelWidth = 3;

  typedef enum logic [LaneDesignSelWidth-1:0] {
    LaneCommonUnit      = 3'd0,  // every format in the finest enabled unit
    LaneOwnUnit         = 3'd1,  // each format in its own unit, the units in the block exponent
    LaneSplit           = 3'd2,  // own units; significand x significand, then one shift
    LaneSplitLateSign   = 3'd3,  // LaneSplit; negation as ~p in the lane, + #negative after the tree
    LaneSplitShortShift = 3'd4   // LaneSplitLateSign; narrow significands take their first shifts,
                                 // decoders select over the code's raw reading
  } lane_design_e;

  typedef struct packed {
    // 1: an element is an integer in its own format's unit and the block exponent gets
    //    lsb_exp(fa) + lsb_exp(fb) at run time; 0: in the common unit of the mask, the block
    //    exponent a constant 2 * unit_exp.
    int unsigned own_unit;
    // 1: an element is sig << shift (a minifloat's significand with its hidden bit and
    //    exponent - 1; an integer's low bits, or 1 << man_bits for the most negative code);
    //    the lane multiplies significands and shifts the product by the shifts' sum.
    int unsigned split;
    // 1: a negative lane passes ~|p| (= -|p| - 1) and the core adds the number of negative
    //    lanes to the tree's sum, one adder for all lanes instead of one negation per lane.
    int unsigned late_sign;
    // 1 (split designs): a format whose significand is narrower than the widest enabled
    //    format's moves its first shift steps into the spare bits (with all formats E2M1's
    //    e >= 2 is {1, m, 0} << (e - 2) and INT4's -8 is 4 << 1), so every shift is shorter.
    int unsigned fold_shift;
    // 1: the decoder reads the code as a sign-magnitude integer (sign = its top bit, which is
    //    every format's sign) and replaces the magnitude by the named format's decode; a
    //    select naming no enabled format leaves that raw reading (nibble_dpu_core zeroes the
    //    block), and a one-format mask decodes its format whatever the select.
    //    0: one-hot select, a select naming no enabled format decodes to +0.
    int unsigned raw_select;
  } lane_design_info_t;

  // THE lane-design table.
  localparam lane_design_info_t [NumLaneDesigns-1:0] LaneDesignTable = '{
    0: '{own_unit: 0, split: 0, late_sign: 0, fold_shift: 0, raw_select: 0},
    1: '{own_unit: 1, split: 0, late_sign: 0, fold_shift: 0, raw_select: 0},
    2: '{own_unit: 1, split: 1, late_sign: 0, fold_shift: 0, raw_select: 0},
    3: '{own_unit: 1, split: 1, late_sign: 1, fold_shift: 0, raw_select: 0},
    4: '{own_unit: 1, split: 1, late_sign: 1, fold_shift: 1, raw_select: 1}
  };

  // The design a DPU, core or tile is built with unless told otherwise: the smallest at all
  // formats, with the least format overhead in area and energy per MAC
  // (docs/results/area-energy.md).
  localparam lane_design_e DefaultLaneDesign = LaneSplitShortShift;

  // Exponent of the unit format f is decoded in.
  function automatic int elem_unit_exp(lane_design_e d, format_mask_t mask, format_e f);
    if (LaneDesignTable[d].own_unit != 0) return lsb_exp(f);
    return unit_exp(mask);
  endfunction

  // Largest decoded magnitude of any enabled format, in the units the design decodes to.
  function automatic int unsigned elem_max_units(lane_design_e d, format_mask_t mask);
    int unsigned m = 0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (mask[f]) begin
        m = unsigned'(maximum(int'(m), int'(max_decode_units(format_e'(f))
                                            << (lsb_exp(format_e'(f)) -
                                                elem_unit_exp(d, mask, format_e'(f))))));
      end
    end
    return m;
  endfunction

  // A split element's natural significand bits: a minifloat's mantissa and hidden bit; an
  // integer's magnitude bits below the sign (its most negative code is 1 << man_bits).
  function automatic int unsigned split_sig_bits(format_e f);
    if (FormatTable[f].encoding == EncTwosComplement) return FormatTable[f].man_bits;
    return FormatTable[f].man_bits + 1;
  endfunction

  // A split lane's significand width: the widest enabled format's natural one.
  function automatic int unsigned split_sig_width(format_mask_t mask);
    int unsigned w = 0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (mask[f]) w = unsigned'(maximum(int'(w), int'(split_sig_bits(format_e'(f)))));
    end
    return w;
  endfunction

  // Shift steps format f moves into its significand (fold_shift): the spare bits of the
  // lane's significand above its natural one. An integer's most negative code 2^man_bits,
  // 1 << man_bits unfolded, becomes (1 << fold) << (man_bits - fold) with fold = the lane's
  // significand width - 1 at most.
  function automatic int unsigned split_fold(lane_design_e d, format_mask_t mask, format_e f);
    if (LaneDesignTable[d].fold_shift == 0) return 0;
    if (FormatTable[f].encoding == EncTwosComplement)
      return unsigned'(minimum(int'(FormatTable[f].man_bits), int'(split_sig_width(mask)) - 1));
    return split_sig_width(mask) - split_sig_bits(f);
  endfunction

  // A split element's largest shift: the exponent field - 1 at its top (2^exp_bits - 2) for a
  // minifloat, man_bits for an integer's most negative code; less the folded steps.
  function automatic int unsigned split_max_shift(lane_design_e d, format_mask_t mask,
                                                  format_e f);
    int top;
    if (FormatTable[f].encoding == EncTwosComplement) top = int'(FormatTable[f].man_bits);
    else top = (1 << FormatTable[f].exp_bits) - 2;
    return unsigned'(maximum(0, top - int'(split_fold(d, mask, f))));
  endfunction

  // At least one bit (a mask whose formats never shift carries a constant-zero shift).
  function automatic int unsigned split_shift_width(lane_design_e d, format_mask_t mask);
    int unsigned s = 0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (mask[f]) s = unsigned'(maximum(int'(s), int'(split_max_shift(d, mask, format_e'(f)))));
    end
    return unsigned'(maximum(1, $clog2(s + 1)));
  endfunction

  // Width of a decoded element's magnitude field: {shift, sig} for a split design, the
  // magnitude in units otherwise.
  function automatic int unsigned lane_mag_width(lane_design_e d, format_mask_t mask);
    if (LaneDesignTable[d].split != 0) return split_shift_width(d, mask) + split_sig_width(mask);
    return unsigned'($clog2(elem_max_units(d, mask) + 1));
  endfunction

  // Width of one signed lane product (units 2^(elem_unit_exp(fa) + elem_unit_exp(fb))).
  function automatic int unsigned lane_product_width(lane_design_e d, format_mask_t mask);
    return unsigned'($clog2(elem_max_units(d, mask) * elem_max_units(d, mask) + 1)) + 1;
  endfunction

  // Width of the exact signed sum of `lanes` lane products.
  function automatic int unsigned lane_partial_sum_width(lane_design_e d, format_mask_t mask,
                                                         int unsigned lanes);
    return lane_product_width(d, mask) + unsigned'($clog2(lanes));
  endfunction

  // --------------------------------------------------------------------------------------
  // Timing of the datapath units (documented in rtl/README.md)
  // --------------------------------------------------------------------------------------
  // nibble_dpu: a block presented with valid_i in cycle t is in acc_o in cycle t + DpuLatency.
  // Public: the Verilated models' package class carries it, and the DPU and tile tests check
  // arrival against it.
  localparam int unsigned DpuLatency /*verilator public*/ = 3;

endpackage
