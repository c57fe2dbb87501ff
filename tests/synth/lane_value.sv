// A lane as the DPU builds it (two nibble_decode and a nibble_lane, lane design LaneDesign),
// its product brought to one scale for every design: units of 2^(2 * unit_exp(FormatMask)),
// the common unit squared, and zero for a format outside FormatMask (as the DPU's block).
// synth_tests.py lane_miter proves this output equal, for every input, between
// LaneCommonUnit and each other design (Yosys miter -equiv + sat).
module lane_value import nibble_pkg::*; #(
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  localparam int unsigned MagWidth   = lane_mag_width(LaneDesign, FormatMask),
  localparam int unsigned ProdWidth  = lane_product_width(LaneDesign, FormatMask),
  localparam int unsigned ValueWidth = product_width(FormatMask) + 1
) (
  input  logic [CodeWidth-1:0]         code_a_i,
  input  format_e                      format_a_i,
  input  logic [CodeWidth-1:0]         code_b_i,
  input  format_e                      format_b_i,
  output logic signed [ValueWidth-1:0] value_o
);

  logic                        neg_a, neg_b, late_neg;
  logic [MagWidth-1:0]         mag_a, mag_b;
  logic signed [ProdWidth-1:0] prod;
  logic [3:0]                  shift;

  nibble_decode #(
    .FormatMask(FormatMask),
    .LaneDesign(LaneDesign)
  ) u_decode_a (
    .code_i  (code_a_i),
    .format_i(format_a_i),
    .neg_o   (neg_a),
    .mag_o   (mag_a)
  );

  nibble_decode #(
    .FormatMask(FormatMask),
    .LaneDesign(LaneDesign)
  ) u_decode_b (
    .code_i  (code_b_i),
    .format_i(format_b_i),
    .neg_o   (neg_b),
    .mag_o   (mag_b)
  );

  nibble_lane #(
    .FormatMask(FormatMask),
    .LaneDesign(LaneDesign)
  ) u_lane (
    .neg_a_i   (neg_a),
    .mag_a_i   (mag_a),
    .neg_b_i   (neg_b),
    .mag_b_i   (mag_b),
    .prod_o    (prod),
    .late_neg_o(late_neg)
  );

  // ua + ub - 2 * unit_exp(FormatMask) >= 0: the product's unit over the common unit squared.
  always_comb begin
    shift = '0;
    for (int unsigned f = 0; f < NumFormats; f++) begin
      if (FormatMask[f] && format_a_i == format_e'(f)) begin
        shift = shift + 4'(elem_unit_exp(LaneDesign, FormatMask, format_e'(f)) - unit_exp(FormatMask));
      end
      if (FormatMask[f] && format_b_i == format_e'(f)) begin
        shift = shift + 4'(elem_unit_exp(LaneDesign, FormatMask, format_e'(f)) - unit_exp(FormatMask));
      end
    end
    value_o = (ValueWidth'(prod) + ValueWidth'(late_neg)) <<< shift;
    // A format outside the mask contributes zero (the one-hot decoders' tie-off, or the
    // raw_select designs' zeroing in nibble_dpu_core).
    if (!format_enabled(FormatMask, format_a_i) || !format_enabled(FormatMask, format_b_i)) begin
      value_o = '0;
    end
  end

endmodule
