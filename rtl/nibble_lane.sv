// One lane of the block dot product: the exact signed product of two decoded elements (sign
// and magnitude in the common fixed point of FormatMask, from nibble_decode). prod_o is in
// units of 2^(2 * unit_exp(FormatMask)). Purely combinational.
module nibble_lane import nibble_pkg::*; #(
  parameter format_mask_t FormatMask = FormatMaskAll,
  localparam int unsigned MagWidth  = common_mag_width(FormatMask),
  localparam int unsigned ProdWidth = product_width(FormatMask)
) (
  input  logic                        neg_a_i,
  input  logic [MagWidth-1:0]         mag_a_i,
  input  logic                        neg_b_i,
  input  logic [MagWidth-1:0]         mag_b_i,
  output logic signed [ProdWidth-1:0] prod_o
);

  logic [ProdWidth-1:0] mag_prod;

  // The magnitude product fits ProdWidth - 1 bits by the definition of product_width.
  always_comb begin
    mag_prod = ProdWidth'(mag_a_i) * ProdWidth'(mag_b_i);
    prod_o   = (neg_a_i ^ neg_b_i) ? -$signed(mag_prod) : $signed(mag_prod);
  end

endmodule
