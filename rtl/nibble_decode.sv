// One 4-bit code of a run-time selected format -> sign and magnitude field in the form the
// lane design LaneDesign multiplies (nibble_pkg::LaneDesignTable):
//   common unit (own_unit = 0): the magnitude in the common fixed point of FormatMask (unit
//     2^unit_exp(FormatMask); with all three formats 2^-2, magnitudes up to E2M1 24, E1M2 7,
//     INT4 32 for code -8);
//   own unit (own_unit = 1, split = 0): the magnitude in the format's own unit 2^lsb_exp(f)
//     (E2M1 12, E1M2 7, INT4 8 at most);
//   split (split = 1): {shift, sig} with magnitude = sig << shift in the format's own unit:
//     a minifloat's sig is its significand with the hidden bit ({e != 0, m}) and shift is
//     e - 1 (0 for subnormals); an integer's sig is |code| below 2^man_bits, and the most
//     negative code (INT4 -8) is sig 1, shift man_bits;
//   fold_shift (split designs): sig is as wide as the widest enabled format's significand,
//     and a narrower one takes its first shift steps into the spare bits (split_fold): with
//     all formats E2M1's e >= 2 is {1, m, 0} with shift e - 2 and INT4's -8 is 4 << 1, so
//     every shift is one bit.
//
// Each enabled format's decoder is generated from its row of nibble_pkg::FormatTable:
//   sign-magnitude minifloat: units = e == 0 ? m : (2^man_bits + m) << (e - 1)
//   two's complement:         units = |code| (-8 decodes to 8)
// The decoder for a format outside FormatMask is not built. The select (raw_select): 0, one-hot,
// a disabled format and a select value that names no format decode to +0; 1, the code is read
// as a sign-magnitude integer (every format's sign is its top bit) and the named format's
// magnitude replaces the raw one, so a format whose decode is that reading (E1M2 with a
// 3-bit significand) needs no select input, a one-format mask no select at all, and a select
// naming no enabled format leaves the raw reading (nibble_dpu_core zeroes such a block).
// Negative zero (minifloat code 0x8) decodes to neg_o = 1 and a zero magnitude. Purely
// combinational.
module nibble_decode import nibble_pkg::*; #(
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  localparam int unsigned MagWidth = lane_mag_width(LaneDesign, FormatMask)
) (
  input  logic [CodeWidth-1:0] code_i,
  input  format_e              format_i,
  output logic                 neg_o,
  output logic [MagWidth-1:0]  mag_o
);

  localparam int unsigned Split      = LaneDesignTable[LaneDesign].split;
  localparam int unsigned SigWidth   = split_sig_width(FormatMask);
  localparam int unsigned ShiftWidth = split_shift_width(LaneDesign, FormatMask);

  logic [NumFormats-1:0] neg_by_format;
  logic [MagWidth-1:0]   mag_by_format [NumFormats];

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    if (FormatMask[f]) begin : gen_enabled
      localparam int unsigned ManBits = FormatTable[f].man_bits;
      localparam int unsigned ExpBits = FormatTable[f].exp_bits;

      if (Split != 0) begin : gen_split
        // Shift steps this format moves into its significand (fold_shift designs).
        localparam int unsigned Fold = split_fold(LaneDesign, FormatMask, format_e'(f));
        logic [SigWidth-1:0]   sig;
        logic [ShiftWidth-1:0] shift;

        if (FormatTable[f].encoding == EncTwosComplement) begin : gen_twos_complement
          logic [CodeWidth-1:0] abs_code;
          always_comb begin
            abs_code = code_i[CodeWidth-1] ? CodeWidth'(-code_i) : code_i;
            sig      = SigWidth'(abs_code[ManBits-1:0]);
            shift    = '0;
            // Only the most negative code has a magnitude of 2^ManBits = (1 << Fold) <<
            // (ManBits - Fold).
            if (abs_code[ManBits]) begin
              sig   = SigWidth'(1) << Fold;
              shift = ShiftWidth'(ManBits - Fold);
            end
          end
        end else begin : gen_minifloat
          logic [ExpBits-1:0]  exp_field;
          logic [ExpBits-1:0]  steps;  // e - 1 for a normal code, 0 for a subnormal
          logic [SigWidth-1:0] base;   // the significand with its hidden bit
          always_comb begin
            exp_field = code_i[ManBits+:ExpBits];
            steps     = (exp_field != '0) ? exp_field - ExpBits'(1) : '0;
            base      = SigWidth'({exp_field != '0, code_i[ManBits-1:0]});
          end

          if (Fold == 0) begin : gen_unfolded
            assign sig   = base;
            assign shift = ShiftWidth'(steps);
          end else begin : gen_folded
            // The first Fold steps go into the significand's spare bits.
            always_comb begin
              if (steps >= ExpBits'(Fold)) begin
                sig   = base << Fold;
                shift = ShiftWidth'(steps - ExpBits'(Fold));
              end else begin
                sig   = base << steps;
                shift = '0;
              end
            end
          end
        end

        assign mag_by_format[f] = {shift, sig};
      end else begin : gen_units
        // Shift from this format's unit to the unit the design decodes to.
        localparam int unsigned Shift = unsigned'(lsb_exp(format_e'(f)) -
                                                  elem_unit_exp(LaneDesign, FormatMask,
                                                                format_e'(f)));
        logic [MagWidth-1:0] units;

        if (FormatTable[f].encoding == EncTwosComplement) begin : gen_twos_complement
          logic [CodeWidth-1:0] abs_code;
          always_comb begin
            abs_code = code_i[CodeWidth-1] ? CodeWidth'(-code_i) : code_i;
            units    = MagWidth'(abs_code);
          end
        end else begin : gen_minifloat
          logic [ExpBits-1:0] exp_field;
          logic [ManBits-1:0] man_field;
          always_comb begin
            exp_field = code_i[ManBits+:ExpBits];
            man_field = code_i[ManBits-1:0];
            units     = MagWidth'(man_field);
            if (exp_field != '0) begin
              units = MagWidth'({1'b1, man_field}) << (exp_field - ExpBits'(1));
            end
          end
        end

        assign mag_by_format[f] = units << Shift;
      end

      assign neg_by_format[f] = code_i[CodeWidth-1];
    end else begin : gen_disabled
      assign neg_by_format[f] = 1'b0;
      assign mag_by_format[f] = '0;
    end
  end

  if (LaneDesignTable[LaneDesign].raw_select != 0) begin : gen_raw_select
    // The code's raw reading, then the named format's magnitude over it; a one-format mask
    // needs no select. Every format's sign is the code's top bit (neg_by_format is unused).
    localparam logic OneFormat = $countones(FormatMask) == 1;
    logic unused_neg_by_format;
    assign unused_neg_by_format = ^neg_by_format;
    always_comb begin
      neg_o = code_i[CodeWidth-1];
      mag_o = MagWidth'(code_i[CodeWidth-2:0]);
      for (int unsigned f = 0; f < NumFormats; f++) begin
        if (FormatMask[f] && (OneFormat || format_i == format_e'(f))) begin
          mag_o = mag_by_format[f];
        end
      end
    end
  end else begin : gen_one_hot_select
    // A value of format_i that names no enabled format selects nothing.
    always_comb begin
      neg_o = 1'b0;
      mag_o = '0;
      for (int unsigned f = 0; f < NumFormats; f++) begin
        if (format_i == format_e'(f)) begin
          neg_o = neg_by_format[f];
          mag_o = mag_by_format[f];
        end
      end
    end
  end

endmodule
