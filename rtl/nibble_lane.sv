// One lane of the block dot product: the exact signed product of two decoded elements (sign
// and magnitude field from nibble_decode with the same FormatMask and LaneDesign). prod_o is
// in units of 2^(elem_unit_exp(fa) + elem_unit_exp(fb)): the common unit squared for
// LaneCommonUnit, the two formats' own units otherwise.
//   split = 0: |p| = mag_a * mag_b
//   split = 1: |p| = (sig_a * sig_b) << (shift_a + shift_b)
//   late_sign = 0: prod_o = +-|p|, late_neg_o = 0
//   late_sign = 1: prod_o = neg ? ~|p| : |p| (~|p| = -|p| - 1) and late_neg_o = neg: the
//                  consumer adds the late_neg_o of all lanes to their sum (nibble_dpu_core)
// Purely combinational.
module nibble_lane import nibble_pkg::*; #(
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  localparam int unsigned MagWidth  = lane_mag_width(LaneDesign, FormatMask),
  localparam int unsigned ProdWidth = lane_product_width(LaneDesign, FormatMask)
) (
  input  logic                        neg_a_i,
  input  logic [MagWidth-1:0]         mag_a_i,
  input  logic                        neg_b_i,
  input  logic [MagWidth-1:0]         mag_b_i,
  output logic signed [ProdWidth-1:0] prod_o,
  output logic                        late_neg_o
);

  localparam int unsigned SigWidth   = split_sig_width(FormatMask);
  localparam int unsigned ShiftWidth = split_shift_width(LaneDesign, FormatMask);

  logic                 neg;
  logic [ProdWidth-1:0] mag_prod;

  // The magnitude product fits ProdWidth - 1 bits by the definition of lane_product_width.
  if (LaneDesignTable[LaneDesign].split != 0) begin : gen_split
    logic [2*SigWidth-1:0] sig_prod;
    logic [ShiftWidth:0]   shift;
    always_comb begin
      sig_prod = (2*SigWidth)'(mag_a_i[SigWidth-1:0]) * (2*SigWidth)'(mag_b_i[SigWidth-1:0]);
      shift    = (ShiftWidth+1)'(mag_a_i[MagWidth-1-:ShiftWidth]) +
                 (ShiftWidth+1)'(mag_b_i[MagWidth-1-:ShiftWidth]);
      mag_prod = ProdWidth'(sig_prod) << shift;
    end
  end else begin : gen_units
    assign mag_prod = ProdWidth'(mag_a_i) * ProdWidth'(mag_b_i);
  end

  assign neg = neg_a_i ^ neg_b_i;

  if (LaneDesignTable[LaneDesign].late_sign != 0) begin : gen_late_sign
    assign prod_o     = $signed(neg ? ~mag_prod : mag_prod);
    assign late_neg_o = neg;
  end else begin : gen_sign
    assign prod_o     = neg ? -$signed(mag_prod) : $signed(mag_prod);
    assign late_neg_o = 1'b0;
  end

endmodule
