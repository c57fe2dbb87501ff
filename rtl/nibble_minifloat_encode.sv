// Sign + grid magnitude in units -> sign-magnitude minifloat code {sign, exponent, mantissa}.
//
// The magnitude is an integer number of grid units (nibble_grid_round's units_o, the unit
// being the format's subnormal step). A magnitude u >= 2^ManBits is normal: exponent field
// msb(u) - ManBits + 1 and mantissa (u >> (field - 1)) - 2^ManBits, the bits below the hidden
// one; a smaller one is subnormal: exponent field 0 and mantissa u. The sign is passed
// through (u = 0 gives {neg_i, 0, 0}); NaN codes and the rule that a zero magnitude is code 0
// belong to the instantiator (nibble_e4m3_encode, nibble_elem_quant). Purely combinational.
module nibble_minifloat_encode #(
  parameter int unsigned ExpBits    = 2,
  parameter int unsigned ManBits    = 1,
  parameter int unsigned UnitsWidth = 4,
  localparam int unsigned CodeBits  = 1 + ExpBits + ManBits
) (
  input  logic                  neg_i,
  input  logic [UnitsWidth-1:0] units_i,
  output logic [CodeBits-1:0]   code_o
);

`include "nibble_assert.svh"

  localparam int unsigned MsbWidth = $clog2(UnitsWidth);

  logic [MsbWidth-1:0]   msb;
  logic [ExpBits-1:0]    exp_field;
  logic [ManBits-1:0]    man_field;
  logic [UnitsWidth-1:0] shifted;

  always_comb begin
    msb = '0;
    for (int unsigned i = 0; i < UnitsWidth; i++) begin
      if (units_i[i]) msb = MsbWidth'(i);
    end
  end

  always_comb begin
    shifted   = '0;
    exp_field = '0;
    man_field = ManBits'(units_i);
    if (units_i >= UnitsWidth'(1 << ManBits)) begin
      exp_field = ExpBits'(int'(msb) - int'(ManBits) + 1);
      shifted   = units_i >> (exp_field - ExpBits'(1));
      man_field = shifted[ManBits-1:0];
    end
    code_o = {neg_i, exp_field, man_field};
  end

  // The hidden bit and above are dropped (the exponent field carries them).
  logic unused_shifted;
  assign unused_shifted = ^shifted[UnitsWidth-1:ManBits];

  // The normal range exists, and the largest magnitude's exponent field fits ExpBits.
  `NIBBLE_ASSERT_INIT(UnitsWidthLegal_A, UnitsWidth > ManBits)
  `NIBBLE_ASSERT_INIT(ExpFieldFits_A, UnitsWidth - ManBits < (1 << ExpBits))

endmodule
