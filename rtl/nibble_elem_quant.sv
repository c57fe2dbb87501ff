// One element: v = fl(x * e), rounded onto the grid of the run-time format (RNE or SR,
// saturating), then encoded (golden's quantizer_code): a zero magnitude is code 0 under
// ZeroPositive and keeps v's sign under ZeroSigned (a minifloat's 0x8; INT4 has no -0); a
// NaN v (a NaN encode scale, or Inf * 0) is code 0. The twin of one iteration of golden's
// quantize_block_elements.
//
// One nibble_grid_round per format of FormatMask, built from nibble_pkg::FormatTable (unit
// 2^lsb_exp, man_bits, max_units); formats outside the mask are not generated and give
// code 0. Encodings: a minifloat is nibble_minifloat_encode's sign-magnitude code (a
// magnitude u >= 2^man_bits has exponent field msb(u) - man_bits + 1 and mantissa
// (u >> (field - 1)) - 2^man_bits, a smaller one is subnormal, field 0); an integer is the
// two's complement of +-u.
//
// Latency: Cut cycles. With Cut = 0 (the default) purely combinational; with Cut = 1 a register
// holds v and the element's selects between the multiply and the rounding (the pipelined
// quantizer's element stage: one binary32 multiply, then the grid rounding and the encoding).
module nibble_elem_quant
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter int unsigned  Cut        = 0
) (
  input  logic                   clk_i,   // read only with Cut = 1
  input  logic                   rst_ni,
  input  logic                   valid_i,
  input  f32_t                   x_i,
  input  f32_t                   encode_i,
  input  format_e                format_i,
  input  rounding_e              rounding_i,
  input  zero_policy_e           zero_i,
  input  logic [SrBitsMax-1:0]   rand_i,
  input  logic [SrBitsWidth-1:0] sr_bits_i,
  output logic [CodeWidth-1:0]   code_o
);

  f32_t                   product, v;
  format_e                format;
  rounding_e              rounding;
  zero_policy_e           zero;
  logic [SrBitsMax-1:0]   rand_bits;
  logic [SrBitsWidth-1:0] sr_bits;
  logic                   unused_valid;

  nibble_f32_mul u_mul (
    .a_i  (x_i),
    .b_i  (encode_i),
    .f32_o(product)
  );

  nibble_pipe #(
    .Width(F32Width + FormatSelWidth + 2 + SrBitsMax + SrBitsWidth),
    .Depth(Cut)
  ) u_cut (
    .clk_i,
    .rst_ni,
    .valid_i,
    .d_i    ({product, format_i, rounding_i, zero_i, rand_i, sr_bits_i}),
    .valid_o(unused_valid),
    .q_o    ({v, format, rounding, zero, rand_bits, sr_bits})
  );

  logic [CodeWidth-1:0] code_by_format [NumFormats];

  // zero is read only where a minifloat format is built (INT4 has no negative zero).
  logic unused_zero;
  assign unused_zero = ^zero;

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    if (FormatMask[f]) begin : gen_enabled
      localparam format_info_t Info      = FormatTable[f];
      localparam int unsigned  ManBits   = Info.man_bits;
      localparam int unsigned  MaxUnits  = max_units(format_e'(f));
      localparam int unsigned  UnitsWidth = $clog2(MaxUnits + 1);

      logic                  neg;
      logic [UnitsWidth-1:0] units;

      nibble_grid_round #(
        .LsbExp   (lsb_exp(format_e'(f))),
        .ManBits  (ManBits),
        .MaxUnits (MaxUnits),
        .SrBitsMax(SrBitsMax)
      ) u_grid_round (
        .v_i         (v),
        .stochastic_i(rounding == RoundStochastic),
        .rand_i      (rand_bits),
        .sr_bits_i   (sr_bits),
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
        logic [ExpBits+ManBits:0] mf_code;  // {sign, exponent, mantissa}
        nibble_minifloat_encode #(
          .ExpBits   (ExpBits),
          .ManBits   (ManBits),
          .UnitsWidth(UnitsWidth)
        ) u_minifloat_encode (
          .neg_i  (neg),
          .units_i(units),
          .code_o (mf_code)
        );
        assign code_by_format[f] = (units == '0 && zero == ZeroPositive) ? '0 : CodeWidth'(mf_code);
      end
    end else begin : gen_disabled
      assign code_by_format[f] = '0;
    end
  end

  always_comb begin
    code_o = '0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (format == format_e'(f)) code_o = code_by_format[f];
    end
    if (f32_is_nan(v[F32Width-2:0])) code_o = '0;
  end

endmodule
