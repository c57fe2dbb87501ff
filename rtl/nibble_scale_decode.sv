// A block-scale code of a run-time selected scale format -> its decode scale as binary32.
//
// Built from nibble_pkg::ScaleFormatTable:
//   ScaleEncMinifloat  (E4M3): (-1)^s * sig * 2^(max(e, 1) - bias - man_bits), sig with the
//                      hidden bit when e != 0; NaN when the code without its sign is nan_code;
//   ScaleEncPowerOfTwo (UE8M0): 2^(e - bias) (2^-127 is a binary32 subnormal); NaN when the
//                      code is nan_code;
//   ScaleEncBinary32   (FP32): the code itself, NaN payloads included.
// Every E4M3 and UE8M0 value is exact in binary32, so nibble_f32_round (the normalizer of
// the datapath) produces it without rounding. A NaN is the canonical F32QuietNaN; golden's
// decode_scale returns the host quiet NaN, so tests compare NaN by NaN-ness. Only the scale
// formats in ScaleFormatMask are built; a select value that names no enabled scale format
// decodes to +0. Purely combinational.
module nibble_scale_decode import nibble_pkg::*; import nibble_f32_pkg::*; #(
  parameter scale_format_mask_t ScaleFormatMask = ScaleFormatMaskAll
) (
  input  logic [ScaleCodeWidth-1:0] code_i,
  input  scale_format_e             format_i,
  output f32_t                      f32_o
);

  // One rounder normalizes whichever narrow format is selected: its magnitude is a
  // significand (at most 4 bits for E4M3, 1 for UE8M0) and its exponent lies in
  // [-127, 127]. These bounds are checked against the table below.
  localparam int unsigned SigWidth = 4;
  localparam int unsigned ExpWidth = 10;

  logic                       neg;
  logic [SigWidth-1:0]        sig;
  logic signed [ExpWidth-1:0] sel_exp;
  f32_t                       normalized;

  logic [NumScaleFormats-1:0] nan_by_format, neg_by_format;
  logic [SigWidth-1:0]        sig_by_format [NumScaleFormats];
  logic signed [ExpWidth-1:0] exp_by_format [NumScaleFormats];

  for (genvar f = 0; f < NumScaleFormats; f++) begin : gen_format
    localparam scale_format_info_t Info = ScaleFormatTable[f];

    if (!ScaleFormatMask[f]) begin : gen_disabled
      assign nan_by_format[f] = 1'b0;
      assign neg_by_format[f] = 1'b0;
      assign sig_by_format[f] = '0;
      assign exp_by_format[f] = '0;
    end else if (Info.encoding == ScaleEncMinifloat) begin : gen_minifloat
      localparam int unsigned SignBit = Info.bits - 1;
      localparam int unsigned ExpBits = Info.exp_bits;
      localparam int unsigned ManBits = Info.man_bits;
      logic [ExpBits-1:0] exp_field, scale_exp;
      always_comb begin
        exp_field = code_i[ManBits+:ExpBits];
        scale_exp = (exp_field != '0) ? exp_field : ExpBits'(1);  // subnormals share e = 1
        nan_by_format[f] = code_i[SignBit-1:0] == Info.nan_code[SignBit-1:0];
        neg_by_format[f] = code_i[SignBit];
        sig_by_format[f] = SigWidth'({exp_field != '0, code_i[ManBits-1:0]});
        exp_by_format[f] = ExpWidth'(scale_exp) - ExpWidth'(Info.bias + Info.man_bits);
      end
    end else if (Info.encoding == ScaleEncPowerOfTwo) begin : gen_power_of_two
      localparam int unsigned ExpBits = Info.exp_bits;
      always_comb begin
        nan_by_format[f] = code_i[ExpBits-1:0] == Info.nan_code[ExpBits-1:0];
        neg_by_format[f] = 1'b0;
        sig_by_format[f] = SigWidth'(1);
        exp_by_format[f] = ExpWidth'(code_i[ExpBits-1:0]) - ExpWidth'(Info.bias);
      end
    end else begin : gen_binary32
      // Passed through below; the normalizer is not used.
      assign nan_by_format[f] = 1'b0;
      assign neg_by_format[f] = 1'b0;
      assign sig_by_format[f] = '0;
      assign exp_by_format[f] = '0;
    end
  end

  always_comb begin
    neg     = 1'b0;
    sig     = '0;
    sel_exp = '0;
    for (int unsigned f = 0; f < NumScaleFormats; f++) begin
      if (format_i == scale_format_e'(f)) begin
        neg     = neg_by_format[f];
        sig     = sig_by_format[f];
        sel_exp = exp_by_format[f];
      end
    end
  end

  nibble_f32_round #(
    .MagWidth(SigWidth),
    .ExpWidth(ExpWidth)
  ) u_normalize (
    .neg_i(neg),
    .mag_i(sig),
    .exp_i(sel_exp),
    .f32_o(normalized)
  );

  always_comb begin
    f32_o = normalized;
    for (int unsigned f = 0; f < NumScaleFormats; f++) begin
      if (ScaleFormatMask[f] && format_i == scale_format_e'(f)) begin
        if (ScaleFormatTable[f].encoding == ScaleEncBinary32) begin
          f32_o = code_i;
        end else if (nan_by_format[f]) begin
          f32_o = F32QuietNaN;
        end
      end
    end
    if (int'(format_i) >= int'(NumScaleFormats)) f32_o = '0;
  end

endmodule
