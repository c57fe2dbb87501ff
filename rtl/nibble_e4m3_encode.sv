// binary32 -> E4M3 block-scale code: round to nearest even, saturate to +-448 (+-Inf too),
// NaN -> the table's NaN code. The twin of golden's encode_e4m3 (golden/src/scale.cpp):
// nibble_grid_round on the E4M3 grid, then nibble_minifloat_encode of the magnitude.
//
// The grid comes from nibble_pkg::ScaleFormatTable[ScaleE4M3]: units of 2^((1 - bias) -
// man_bits), the largest finite magnitude ((2^(man_bits+1) - 2) << (2^exp_bits - 2)) units
// (OCP E4M3: the all-ones code is NaN, so the top binade ends one step early; 448 for
// E4M3). Purely combinational.
module nibble_e4m3_encode import nibble_pkg::*; import nibble_f32_pkg::*; #(
  localparam scale_format_info_t Info = ScaleFormatTable[ScaleE4M3],
  localparam int unsigned CodeBits = Info.bits
) (
  input  f32_t                f32_i,
  output logic [CodeBits-1:0] code_o
);

  localparam int unsigned ManBits  = Info.man_bits;
  localparam int unsigned ExpBits  = Info.exp_bits;
  localparam int          LsbExp   = (1 - int'(Info.bias)) - int'(ManBits);
  localparam int unsigned MaxUnits = ((2 << ManBits) - 2) << ((1 << ExpBits) - 2);
  localparam int unsigned UnitsWidth = $clog2(MaxUnits + 1);

  logic                  neg;
  logic [UnitsWidth-1:0] units;
  logic [CodeBits-1:0]   mf_code;

  nibble_grid_round #(
    .LsbExp  (LsbExp),
    .ManBits (ManBits),
    .MaxUnits(MaxUnits)
  ) u_grid_round (
    .v_i         (f32_i),
    .stochastic_i(1'b0),
    .rand_i      ('0),
    .sr_bits_i   ('0),
    .neg_o       (neg),
    .units_o     (units)
  );

  nibble_minifloat_encode #(
    .ExpBits   (ExpBits),
    .ManBits   (ManBits),
    .UnitsWidth(UnitsWidth)
  ) u_minifloat_encode (
    .neg_i  (neg),
    .units_i(units),
    .code_o (mf_code)
  );

  always_comb begin
    code_o = mf_code;
    if (f32_is_nan(f32_i[F32Width-2:0])) begin
      code_o = Info.nan_code[CodeBits-1:0];
    end
  end

endmodule
