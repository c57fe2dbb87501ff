// Test bench top for dpu_test.cpp: eighteen nibble_dpu configurations built once, on shared
// inputs. Instances 0..5 and 14..17 have the default lane design: instance 0 has 32 lanes and
// every format; instances 1..5 have 16 lanes (they see lanes 15:0) and the format masks all,
// E2M1, E1M2, INT4, E2M1+E1M2, and 14..15 the masks E2M1+INT4 and E1M2+INT4; 16 and 17 have
// every format but only the scale formats E4M3 + UE8M0 (16) or FP32 (17). Instances 6..13 are
// each other lane design, (DefaultLaneDesign + k) mod NumLaneDesigns for k = 1 .. 4, with 16
// lanes, at all formats and at E2M1 alone. Every other instance decodes every scale format.
// valid_i has one bit per instance: the test raises only those whose lanes, formats and scale
// formats fit the block.
module tb_dpu import nibble_pkg::*; import nibble_f32_pkg::*; #(
  localparam int unsigned NumDpus  = 18,
  localparam int unsigned MaxLanes = 32
) (
  input  logic                               clk_i,
  input  logic                               rst_ni,
  input  logic [NumDpus-1:0]                 valid_i,
  input  logic                               first_i,
  input  logic                               last_i,
  input  format_e                            format_a_i,
  input  format_e                            format_b_i,
  input  scale_format_e                      scale_format_a_i,
  input  scale_format_e                      scale_format_b_i,
  input  logic [MaxLanes-1:0][CodeWidth-1:0] codes_a_i,
  input  logic [MaxLanes-1:0][CodeWidth-1:0] codes_b_i,
  input  logic [ScaleCodeWidth-1:0]          scale_a_i,
  input  logic [ScaleCodeWidth-1:0]          scale_b_i,
  output logic [NumDpus-1:0]                 acc_valid_o,
  output logic [NumDpus-1:0]                 acc_last_o,
  output logic [NumDpus-1:0][F32Width-1:0]   acc_o
);

  localparam int unsigned  DpuLanes [NumDpus] = '{32, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                                   16, 16, 16, 16, 16, 16};
  localparam format_mask_t DpuMasks [NumDpus] = '{
    FormatMaskAll, FormatMaskAll, FormatMaskE2M1, FormatMaskE1M2, FormatMaskInt4,
    FormatMaskMinifloat, FormatMaskAll, FormatMaskE2M1, FormatMaskAll, FormatMaskE2M1,
    FormatMaskAll, FormatMaskE2M1, FormatMaskAll, FormatMaskE2M1,
    FormatMaskE2M1 | FormatMaskInt4, FormatMaskE1M2 | FormatMaskInt4, FormatMaskAll, FormatMaskAll
  };
  // 0 for the default design, k for the k-th design after it.
  localparam int unsigned  DpuDesignOffsets [NumDpus] = '{0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4,
                                                          0, 0, 0, 0};
  localparam scale_format_mask_t DpuScaleMasks [NumDpus] = '{
    ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll,
    ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll,
    ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll,
    ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll, ScaleFormatMaskAll,
    ScaleFormatMaskNarrow, ScaleFormatMaskFP32
  };

  for (genvar i = 0; i < NumDpus; i++) begin : gen_dpu
    localparam int unsigned Lanes = DpuLanes[i];
    localparam lane_design_e Design =
        lane_design_e'((int'(DefaultLaneDesign) + DpuDesignOffsets[i]) % NumLaneDesigns);
    nibble_dpu #(
      .Lanes     (Lanes),
      .FormatMask     (DpuMasks[i]),
      .LaneDesign     (Design),
      .ScaleFormatMask(DpuScaleMasks[i])
    ) u_dpu (
      .clk_i,
      .rst_ni,
      .valid_i         (valid_i[i]),
      .first_i,
      .last_i,
      .format_a_i,
      .format_b_i,
      .scale_format_a_i,
      .scale_format_b_i,
      .codes_a_i       (codes_a_i[Lanes-1:0]),
      .codes_b_i       (codes_b_i[Lanes-1:0]),
      .scale_a_i,
      .scale_b_i,
      .acc_valid_o     (acc_valid_o[i]),
      .acc_last_o      (acc_last_o[i]),
      .acc_o           (acc_o[i])
    );
  end

endmodule
