// One element of a finite block: v = fl(x * e), rounded onto the grid of the run-time
// format (RNE or SR, saturating), then encoded; a zero magnitude is code 0 (never negative
// zero). The twin of one iteration of golden's quantize_block_elements.
//
// One nibble_grid_round per format of FormatMask, built from nibble_pkg::FormatTable (unit
// 2^lsb_exp, man_bits, max_units); formats outside the mask are not generated and give
// code 0. Encodings: a minifloat magnitude u >= 2^man_bits has exponent field
// msb(u) - man_bits + 1 and mantissa (u >> (field - 1)) - 2^man_bits, a smaller one is
// subnormal (field 0); an integer is the two's complement of +-u. Purely combinational.
module nibble_elem_quant
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  parameter format_mask_t FormatMask = FormatMaskAll
) (
  input  f32_t                   x_i,
  input  f32_t                   encode_i,
  input  format_e                format_i,
  input  rounding_e              rounding_i,
  input  logic [SrBitsMax-1:0]   rand_i,
  input  logic [SrBitsWidth-1:0] sr_bits_i,
  output logic [CodeWidth-1:0]   code_o
);

  f32_t v;

  nibble_f32_mul u_mul (
    .a_i  (x_i),
    .b_i  (encode_i),
    .f32_o(v)
  );

  logic [CodeWidth-1:0] code_by_format [NumFormats];

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    if (FormatMask[f]) begin : gen_enabled
      localparam format_info_t Info      = FormatTable[f];
      localparam int unsigned  ManBits   = Info.man_bits;
      localparam int unsigned  MaxUnits  = max_units(format_e'(f));
      localparam int unsigned  UnitsWidth = $clog2(MaxUnits + 1);
      localparam int unsigned  MsbWidth  = $clog2(UnitsWidth);

      logic                  neg;
      logic [UnitsWidth-1:0] units;

      nibble_grid_round #(
        .LsbExp   (lsb_exp(format_e'(f))),
        .ManBits  (ManBits),
        .MaxUnits (MaxUnits),
        .SrBitsMax(SrBitsMax)
      ) u_grid_round (
        .v_i         (v),
        .stochastic_i(rounding_i == RoundStochastic),
        .rand_i      (rand_i),
        .sr_bits_i   (sr_bits_i),
        .neg_o       (neg),
        .units_o     (units)
      );

      if (Info.encoding == EncTwosComplement) begin : gen_integer
        logic [UnitsWidth:0] value;
        always_comb begin
          value = neg ? -(UnitsWidth + 1)'(units) : (UnitsWidth + 1)'(units);
          code_by_format[f] = CodeWidth'(value);
        end
      end else begin : gen_minifloat
        localparam int unsigned ExpBits = Info.exp_bits;
        logic [MsbWidth-1:0]   msb;
        logic [ExpBits-1:0]    exp_field;
        logic [ManBits-1:0]    man_field;
        logic [UnitsWidth-1:0] shifted;
        always_comb begin
          msb = '0;
          for (int unsigned i = 0; i < UnitsWidth; i++) begin
            if (units[i]) msb = MsbWidth'(i);
          end
        end
        always_comb begin
          shifted   = '0;
          exp_field = '0;
          man_field = ManBits'(units);
          if (units >= UnitsWidth'(1 << ManBits)) begin
            exp_field = ExpBits'(int'(msb) - int'(ManBits) + 1);
            shifted   = units >> (exp_field - ExpBits'(1));
            man_field = shifted[ManBits-1:0];
          end
          code_by_format[f] = (units == '0) ? '0 : CodeWidth'({neg, exp_field, man_field});
        end
        logic unused_shifted;
        assign unused_shifted = ^shifted;
      end
    end else begin : gen_disabled
      assign code_by_format[f] = '0;
    end
  end

  always_comb begin
    code_o = '0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (format_i == format_e'(f)) code_o = code_by_format[f];
    end
  end

endmodule
