// Test bench top for pkg_lane_test.cpp: a lane as the DPU builds it (two nibble_decode and a
// nibble_lane) for each lane design and each of the seven format masks, side by side on the same inputs, and
// nibble_pkg's tables and derived facts as constant outputs (one byte per format, scale
// format, mask or lane design) for comparison with golden's and power/lane_design.h's.
module tb_lanes import nibble_pkg::*; #(
  localparam int unsigned NumMasks = 7
) (
  input  logic [CodeWidth-1:0]              code_a_i,
  input  format_e                           format_a_i,
  input  logic [CodeWidth-1:0]              code_b_i,
  input  format_e                           format_b_i,
  // Lane design d, mask i: element d * NumMasks + i. The lane's product (sign-extended) and
  // its late_neg_o.
  output logic [NumLaneDesigns*NumMasks-1:0][15:0] prod_o,
  output logic [NumLaneDesigns*NumMasks-1:0]       late_neg_o,

  output logic [NumFormats-1:0][7:0]        encoding_o,
  output logic [NumFormats-1:0][7:0]        exp_bits_o,
  output logic [NumFormats-1:0][7:0]        man_bits_o,
  output logic [NumFormats-1:0][7:0]        bias_o,
  output logic [NumFormats-1:0][7:0]        lsb_exp_o,  // two's complement
  output logic [NumFormats-1:0][7:0]        max_units_o,
  output logic [NumFormats-1:0][7:0]        max_decode_units_o,
  output logic [NumScaleFormats-1:0][7:0]   scale_bits_o,
  output logic [NumScaleFormats-1:0][7:0]   scale_exp_bits_o,
  output logic [NumScaleFormats-1:0][7:0]   scale_man_bits_o,
  output logic [NumScaleFormats-1:0][7:0]   scale_bias_o,
  output logic [NumScaleFormats-1:0][31:0]  scale_nan_code_o,
  output logic [NumMasks-1:0][7:0]          mask_o,
  output logic [NumMasks-1:0][7:0]          unit_exp_o,  // two's complement
  output logic [NumMasks-1:0][7:0]          common_max_units_o,
  output logic [NumMasks-1:0][7:0]          common_mag_width_o,
  output logic [7:0]                        num_lane_designs_o,
  output logic [7:0]                        default_lane_design_o,
  output logic [NumLaneDesigns-1:0][7:0]    own_unit_o,
  output logic [NumLaneDesigns-1:0][7:0]    split_o,
  output logic [NumLaneDesigns-1:0][7:0]    late_sign_o,
  output logic [NumLaneDesigns-1:0][7:0]    fold_shift_o,
  output logic [NumLaneDesigns-1:0][7:0]    raw_select_o
);

  // Every non-empty mask.
  localparam format_mask_t Masks [NumMasks] = '{
    FormatMaskE2M1, FormatMaskE1M2, FormatMaskInt4, FormatMaskMinifloat, FormatMaskAll,
    FormatMaskE2M1 | FormatMaskInt4, FormatMaskE1M2 | FormatMaskInt4
  };

  for (genvar d = 0; d < NumLaneDesigns; d++) begin : gen_design
    localparam lane_design_e Design = lane_design_e'(d);
    for (genvar i = 0; i < NumMasks; i++) begin : gen_mask
      localparam int unsigned MagWidth  = lane_mag_width(Design, Masks[i]);
      localparam int unsigned ProdWidth = lane_product_width(Design, Masks[i]);
      logic                        neg_a, neg_b;
      logic [MagWidth-1:0]         mag_a, mag_b;
      logic signed [ProdWidth-1:0] prod;
      nibble_decode #(
        .FormatMask(Masks[i]),
        .LaneDesign(Design)
      ) u_decode_a (
        .code_i  (code_a_i),
        .format_i(format_a_i),
        .neg_o   (neg_a),
        .mag_o   (mag_a)
      );
      nibble_decode #(
        .FormatMask(Masks[i]),
        .LaneDesign(Design)
      ) u_decode_b (
        .code_i  (code_b_i),
        .format_i(format_b_i),
        .neg_o   (neg_b),
        .mag_o   (mag_b)
      );
      nibble_lane #(
        .FormatMask(Masks[i]),
        .LaneDesign(Design)
      ) u_lane (
        .neg_a_i   (neg_a),
        .mag_a_i   (mag_a),
        .neg_b_i   (neg_b),
        .mag_b_i   (mag_b),
        .prod_o    (prod),
        .late_neg_o(late_neg_o[d*NumMasks+i])
      );
      assign prod_o[d*NumMasks+i] = 16'(prod);
    end
    assign own_unit_o[d]  = 8'(LaneDesignTable[d].own_unit);
    assign split_o[d]     = 8'(LaneDesignTable[d].split);
    assign late_sign_o[d] = 8'(LaneDesignTable[d].late_sign);
    assign fold_shift_o[d] = 8'(LaneDesignTable[d].fold_shift);
    assign raw_select_o[d] = 8'(LaneDesignTable[d].raw_select);
  end

  assign num_lane_designs_o    = 8'(NumLaneDesigns);
  assign default_lane_design_o = 8'(DefaultLaneDesign);

  for (genvar i = 0; i < NumMasks; i++) begin : gen_mask
    assign mask_o[i]             = 8'(Masks[i]);
    assign unit_exp_o[i]         = 8'(unit_exp(Masks[i]));
    assign common_max_units_o[i] = 8'(common_max_units(Masks[i]));
    assign common_mag_width_o[i] = 8'(common_mag_width(Masks[i]));
  end

  for (genvar f = 0; f < NumFormats; f++) begin : gen_format
    assign encoding_o[f]         = 8'(FormatTable[f].encoding);
    assign exp_bits_o[f]         = 8'(FormatTable[f].exp_bits);
    assign man_bits_o[f]         = 8'(FormatTable[f].man_bits);
    assign bias_o[f]             = 8'(FormatTable[f].bias);
    assign lsb_exp_o[f]          = 8'(lsb_exp(format_e'(f)));
    assign max_units_o[f]        = 8'(max_units(format_e'(f)));
    assign max_decode_units_o[f] = 8'(max_decode_units(format_e'(f)));
  end

  for (genvar f = 0; f < NumScaleFormats; f++) begin : gen_scale_format
    assign scale_bits_o[f]     = 8'(ScaleFormatTable[f].bits);
    assign scale_exp_bits_o[f] = 8'(ScaleFormatTable[f].exp_bits);
    assign scale_man_bits_o[f] = 8'(ScaleFormatTable[f].man_bits);
    assign scale_bias_o[f]     = 8'(ScaleFormatTable[f].bias);
    assign scale_nan_code_o[f] = ScaleFormatTable[f].nan_code;
  end

endmodule
