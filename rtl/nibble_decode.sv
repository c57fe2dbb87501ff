// One 4-bit code of a run-time selected format -> sign and magnitude in the common fixed
// point of the formats in FormatMask (unit 2^unit_exp(FormatMask); with all three formats
// the unit is 2^-2 and the magnitudes reach E2M1 24, E1M2 7, INT4 32 for code -8).
//
// Each enabled format's decoder is generated from its row of nibble_pkg::FormatTable:
//   sign-magnitude minifloat: units = e == 0 ? m : (2^man_bits + m) << (e - 1)
//   two's complement:         units = |code| (-8 decodes to 8)
// then shifted from the format's unit to the common unit. A disabled format, and a select
// value that names no format, decode to +0: the decoder for a format outside FormatMask is
// not built. Negative zero (minifloat code 0x8) decodes to neg_o = 1, mag_o = 0.
// Purely combinational.
module nibble_decode import nibble_pkg::*; #(
  parameter format_mask_t FormatMask = FormatMaskAll,
  localparam int unsigned MagWidth = common_mag_width(FormatMask)
) (
  input  logic [CodeWidth-1:0] code_i,
  input  format_e              format_i,
  output logic                 neg_o,
  output logic [MagWidth-1:0]  mag_o
);

  localparam int UnitExp = unit_exp(FormatMask);

  logic [NumFormats-1:0] neg_by_format;
  logic [MagWidth-1:0]   mag_by_format [NumFormats];

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    if (FormatMask[f]) begin : gen_enabled
      // Shift from this format's unit to the common unit.
      localparam int unsigned Shift = unsigned'(lsb_exp(format_e'(f)) - UnitExp);
      localparam int unsigned ManBits = FormatTable[f].man_bits;
      localparam int unsigned ExpBits = FormatTable[f].exp_bits;

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

      assign neg_by_format[f] = code_i[CodeWidth-1];
      assign mag_by_format[f] = units << Shift;
    end else begin : gen_disabled
      assign neg_by_format[f] = 1'b0;
      assign mag_by_format[f] = '0;
    end
  end

  // One-hot select: a value of format_i that names no enabled format selects nothing.
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

endmodule
