// An Rows x Cols array of block dot-product units: one k-block of an A row panel and a B
// column panel per cycle in, a C tile (Rows x Cols binary32) streamed out row by row.
//
// DPU (m, n) computes C[m][n] = sum over the tile's k-blocks of A row m . B row n (C = A.B^T,
// both operands run along k), exactly as golden's gemm for that element before the
// per-tensor scales. Formats and scale formats are run-time selects shared by the tile; the
// formats in FormatMask and the scale formats in ScaleFormatMask are built.
//
// Input (valid/ready): a beat is taken in a cycle with in_valid_i && in_ready_o. in_first_i
// marks a tile's first k-block (the accumulators restart from +0), in_last_i its last (the
// tile is then complete). A tile may be one block (first and last together). The producer
// keeps valid and data stable until ready. in_ready_o is low only while a block with
// in_last_i is offered and the previous tile still occupies the output buffer (or its last
// block is still in the pipeline): ready depends on in_last_i, never on in_valid_i.
//
// Structure: one set of element decoders and one scale decoder per A row and per B column,
// shared by the Rows x Cols nibble_dpu_core instances (decoding is linear in Rows + Cols, the
// arithmetic in Rows * Cols).
//
// Output (valid/ready): Rows beats per tile, row 0 first; out_row_o is the row, out_last_o
// marks row Rows - 1, out_c_o[n] is C[row][n]. The tile is copied into an output buffer when
// its last block leaves the DPUs, so the next tile's blocks keep flowing while it drains.
//
// Latency: the last block of a tile accepted in cycle t gives the first output row in cycle
// t + DpuLatency + 1 (= t + 4) when out_ready_i is high; then one row per cycle.
module nibble_tile import nibble_pkg::*; import nibble_f32_pkg::*; #(
  parameter int unsigned  Rows       = 4,
  parameter int unsigned  Cols       = 4,
  parameter int unsigned  Lanes      = 16,
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  parameter scale_format_mask_t ScaleFormatMask = ScaleFormatMaskAll,
  localparam int unsigned RowWidth   = (Rows > 1) ? $clog2(Rows) : 1
) (
  input  logic                                      clk_i,
  input  logic                                      rst_ni,

  input  logic                                      in_valid_i,
  output logic                                      in_ready_o,
  input  logic                                      in_first_i,
  input  logic                                      in_last_i,
  input  format_e                                   format_a_i,
  input  format_e                                   format_b_i,
  input  scale_format_e                             scale_format_a_i,
  input  scale_format_e                             scale_format_b_i,
  input  logic [Rows-1:0][Lanes-1:0][CodeWidth-1:0] codes_a_i,
  input  logic [Rows-1:0][ScaleCodeWidth-1:0]       scales_a_i,
  input  logic [Cols-1:0][Lanes-1:0][CodeWidth-1:0] codes_b_i,
  input  logic [Cols-1:0][ScaleCodeWidth-1:0]       scales_b_i,

  output logic                                      out_valid_o,
  input  logic                                      out_ready_i,
  output logic [RowWidth-1:0]                       out_row_o,
  output logic                                      out_last_o,
  output logic [Cols-1:0][F32Width-1:0]             out_c_o
);

`include "nibble_assert.svh"

  localparam int unsigned NumDpus  = Rows * Cols;
  localparam int unsigned MagWidth = lane_mag_width(LaneDesign, FormatMask);
  localparam logic [RowWidth-1:0] LastRow = RowWidth'(Rows - 1);

  logic                     accept;
  logic [NumDpus-1:0]       dpu_acc_valid, dpu_acc_last;
  f32_t                     dpu_acc [Rows][Cols];

  assign accept = in_valid_i && in_ready_o;

  // ---------------------------------------------------------------------------------------
  // Decoders, one set per A row and per B column, shared along the array
  // ---------------------------------------------------------------------------------------
  logic [Rows-1:0][Lanes-1:0]               neg_a;
  logic [Rows-1:0][Lanes-1:0][MagWidth-1:0] mag_a;
  f32_t                                     scale_a [Rows];
  logic [Cols-1:0][Lanes-1:0]               neg_b;
  logic [Cols-1:0][Lanes-1:0][MagWidth-1:0] mag_b;
  f32_t                                     scale_b [Cols];

  for (genvar m = 0; m < Rows; m++) begin : gen_decode_a
    for (genvar i = 0; i < Lanes; i++) begin : gen_lane
      nibble_decode #(
        .FormatMask(FormatMask),
        .LaneDesign(LaneDesign)
      ) u_decode (
        .code_i  (codes_a_i[m][i]),
        .format_i(format_a_i),
        .neg_o   (neg_a[m][i]),
        .mag_o   (mag_a[m][i])
      );
    end
    nibble_scale_decode #(
      .ScaleFormatMask(ScaleFormatMask)
    ) u_scale_decode (
      .code_i  (scales_a_i[m]),
      .format_i(scale_format_a_i),
      .f32_o   (scale_a[m])
    );
  end

  for (genvar n = 0; n < Cols; n++) begin : gen_decode_b
    for (genvar i = 0; i < Lanes; i++) begin : gen_lane
      nibble_decode #(
        .FormatMask(FormatMask),
        .LaneDesign(LaneDesign)
      ) u_decode (
        .code_i  (codes_b_i[n][i]),
        .format_i(format_b_i),
        .neg_o   (neg_b[n][i]),
        .mag_o   (mag_b[n][i])
      );
    end
    nibble_scale_decode #(
      .ScaleFormatMask(ScaleFormatMask)
    ) u_scale_decode (
      .code_i  (scales_b_i[n]),
      .format_i(scale_format_b_i),
      .f32_o   (scale_b[n])
    );
  end

  // ---------------------------------------------------------------------------------------
  // The DPU array: core (m, n) takes A row m and B column n
  // ---------------------------------------------------------------------------------------
  for (genvar m = 0; m < Rows; m++) begin : gen_row
    for (genvar n = 0; n < Cols; n++) begin : gen_col
      nibble_dpu_core #(
        .Lanes     (Lanes),
        .FormatMask(FormatMask),
        .LaneDesign(LaneDesign)
      ) u_dpu (
        .clk_i,
        .rst_ni,
        .valid_i    (accept),
        .first_i    (in_first_i),
        .last_i     (in_last_i),
        .format_a_i,
        .format_b_i,
        .neg_a_i    (neg_a[m]),
        .mag_a_i    (mag_a[m]),
        .neg_b_i    (neg_b[n]),
        .mag_b_i    (mag_b[n]),
        .scale_a_i  (scale_a[m]),
        .scale_b_i  (scale_b[n]),
        .acc_valid_o(dpu_acc_valid[m*Cols+n]),
        .acc_last_o (dpu_acc_last[m*Cols+n]),
        .acc_o      (dpu_acc[m][n])
      );
    end
  end

  // All DPUs run in lock step: a tile is complete when its last block leaves them.
  logic tile_done;
  assign tile_done = &dpu_acc_last;

  // Every accumulated block is consumed through tile_done; the per-block strobe is only
  // checked by the lock-step assertion below.
  logic unused_dpu_acc_valid;
  assign unused_dpu_acc_valid = ^dpu_acc_valid;

  // ---------------------------------------------------------------------------------------
  // Flow control and the output buffer
  // ---------------------------------------------------------------------------------------
  logic                 pending_d, pending_q;  // a last block is inside the DPUs
  logic                 busy_d, busy_q;        // the output buffer holds a tile
  logic [RowWidth-1:0]  row_d, row_q;
  f32_t                 tile_d [Rows][Cols];
  f32_t                 tile_q [Rows][Cols];
  logic                 out_done;

  assign in_ready_o = !(in_last_i && (pending_q || busy_q));
  assign out_done   = busy_q && out_ready_i && (row_q == LastRow);

  always_comb begin
    pending_d = pending_q;
    busy_d    = busy_q;
    row_d     = row_q;
    tile_d    = tile_q;
    if (accept && in_last_i) pending_d = 1'b1;
    if (tile_done) begin
      pending_d = 1'b0;
      busy_d    = 1'b1;
      row_d     = '0;
      tile_d    = dpu_acc;
    end else if (busy_q && out_ready_i) begin
      busy_d = !out_done;
      row_d  = out_done ? '0 : row_q + RowWidth'(1);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pending_q <= 1'b0;
      busy_q    <= 1'b0;
      row_q     <= '0;
    end else begin
      pending_q <= pending_d;
      busy_q    <= busy_d;
      row_q     <= row_d;
    end
  end

  // The buffer is read only while busy_q, which is set with it; no reset needed.
  always_ff @(posedge clk_i) begin
    tile_q <= tile_d;
  end

  assign out_valid_o = busy_q;
  assign out_row_o   = row_q;
  assign out_last_o  = row_q == LastRow;
  always_comb begin
    out_c_o = '0;
    for (int unsigned m = 0; m < Rows; m++) begin
      if (row_q == RowWidth'(m)) begin
        for (int unsigned n = 0; n < Cols; n++) out_c_o[n] = tile_q[m][n];
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------
  `NIBBLE_ASSERT_INIT(ShapeLegal_A, Rows >= 1 && Cols >= 1)
  // A beat must use formats this unit was built for (others decode to zero).
  `NIBBLE_ASSUME(FormatAEnabled_M, !in_valid_i || format_enabled(FormatMask, format_a_i))
  `NIBBLE_ASSUME(FormatBEnabled_M, !in_valid_i || format_enabled(FormatMask, format_b_i))
  `NIBBLE_ASSUME(ScaleFormatAEnabled_M,
                 !in_valid_i || scale_format_enabled(ScaleFormatMask, scale_format_a_i))
  `NIBBLE_ASSUME(ScaleFormatBEnabled_M,
                 !in_valid_i || scale_format_enabled(ScaleFormatMask, scale_format_b_i))
  // Input protocol: valid holds until ready, data holds while it waits.
  `NIBBLE_ASSUME(InValidHeld_M, !$past(in_valid_i && !in_ready_o) || in_valid_i)
  `NIBBLE_ASSUME(InDataStable_M, !$past(in_valid_i && !in_ready_o) ||
                 ($stable(in_first_i) && $stable(in_last_i) && $stable(codes_a_i) &&
                  $stable(codes_b_i) && $stable(scales_a_i) && $stable(scales_b_i) &&
                  $stable(format_a_i) && $stable(format_b_i) &&
                  $stable(scale_format_a_i) && $stable(scale_format_b_i)))
  // Output protocol: the same rules, which this unit guarantees.
  `NIBBLE_ASSERT(OutValidHeld_A, !$past(out_valid_o && !out_ready_i) || out_valid_o)
  `NIBBLE_ASSERT(OutDataStable_A, !$past(out_valid_o && !out_ready_i) ||
                 ($stable(out_c_o) && $stable(out_row_o) && $stable(out_last_o)))
  // A finished tile never lands on a buffer that is still draining.
  `NIBBLE_ASSERT(NoBufferOverrun_A, !(tile_done && busy_q))
  // The DPUs run in lock step.
  `NIBBLE_ASSERT(DpusLockStep_A, (dpu_acc_valid == '0 || dpu_acc_valid == '1) &&
                                 (dpu_acc_last == '0 || dpu_acc_last == '1))
  `NIBBLE_ASSERT_KNOWN(InReadyKnown_A, in_ready_o)
  `NIBBLE_ASSERT_KNOWN(OutValidKnown_A, out_valid_o)
  `NIBBLE_ASSERT(OutDataKnown_A, !out_valid_o || !$isunknown({out_c_o, out_row_o, out_last_o}))

endmodule
