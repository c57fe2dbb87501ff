// Test bench top for quant_test.cpp: six nibble_quantizer configurations built once, on
// shared inputs. Instance 0 has 32 lanes and every format; instances 1..4 have 16 lanes
// (they see lanes 15:0) and the format masks all, E2M1, E1M2, INT4; instance 5 is instance 0
// pipelined for the clock target (DivStages = QuantPipeDivStages, latency QuantPipeLatency).
// valid_i has one bit per instance: the test raises only those whose lanes and format fit
// the block.
module tb_quant
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
#(
  localparam int unsigned NumQuants = 6,
  localparam int unsigned MaxLanes  = 32
) (
  input  logic                                   clk_i,
  input  logic                                   rst_ni,
  input  logic [NumQuants-1:0]                   valid_i,
  input  format_e                                format_i,
  input  scale_mode_e                            mode_i,
  input  rounding_e                              rounding_i,
  input  zero_policy_e                           zero_i,
  input  nonfinite_policy_e                      nonfinite_i,
  input  logic [SrBitsWidth-1:0]                 sr_bits_i,
  input  f32_t                                   s_enc_i,
  input  f32_t                                   g_i,
  input  logic [MaxLanes-1:0][F32Width-1:0]      x_i,
  input  logic [MaxLanes-1:0][SrBitsMax-1:0]     rand_i,
  output logic [NumQuants-1:0]                   valid_o,
  output logic [NumQuants-1:0][ScaleCodeWidth-1:0] scale_o,
  output logic [NumQuants-1:0][MaxLanes-1:0][CodeWidth-1:0] codes_o
);

  localparam int unsigned  QuantLanes [NumQuants] = '{32, 16, 16, 16, 16, 32};
  localparam format_mask_t QuantMasks [NumQuants] = '{
    FormatMaskAll, FormatMaskAll, FormatMaskE2M1, FormatMaskE1M2, FormatMaskInt4, FormatMaskAll
  };
  localparam int unsigned  QuantDivStages [NumQuants] = '{0, 0, 0, 0, 0, QuantPipeDivStages};

  for (genvar i = 0; i < NumQuants; i++) begin : gen_quant
    localparam int unsigned Lanes = QuantLanes[i];
    logic [Lanes-1:0][CodeWidth-1:0] codes;

    nibble_quantizer #(
      .Lanes     (Lanes),
      .FormatMask(QuantMasks[i]),
      .DivStages (QuantDivStages[i])
    ) u_quantizer (
      .clk_i,
      .rst_ni,
      .valid_i   (valid_i[i]),
      .format_i,
      .mode_i,
      .rounding_i,
      .zero_i,
      .nonfinite_i,
      .sr_bits_i,
      .s_enc_i,
      .g_i,
      .x_i       (x_i[Lanes-1:0]),
      .rand_i    (rand_i[Lanes-1:0]),
      .valid_o   (valid_o[i]),
      .scale_o   (scale_o[i]),
      .codes_o   (codes)
    );

    assign codes_o[i] = {{(MaxLanes - Lanes) * CodeWidth{1'b0}}, codes};
  end

endmodule
