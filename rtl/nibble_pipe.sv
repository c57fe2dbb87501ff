// A valid-only delay line: Depth register stages, one item per cycle, no stalls. Every
// stage loads the stage before it each cycle and its valid bit travels beside it, so the
// item that entered with valid_i leaves Depth cycles later with valid_o; only the valid bits
// are reset. Unlike the load-enabled stages elsewhere in rtl/, nothing is held: without
// stalls nothing needs to be, and a load enable would fan each stage's valid bit out to every
// data flop (hundreds in the quantizer's delay lines), a net no buffering in the flow reaches
// and the path that limited the pipelined quantizer's clock. Depth = 0 is a wire. The
// pipelined quantizer delays its elements and selects through one of these while the block
// scale is computed, and cuts its dividers and block scale with them.
module nibble_pipe #(
  parameter int unsigned Width = 1,
  parameter int unsigned Depth = 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             valid_i,
  input  logic [Width-1:0] d_i,
  output logic             valid_o,
  output logic [Width-1:0] q_o
);

  if (Depth == 0) begin : gen_wire
    logic unused_clk;
    assign unused_clk = clk_i ^ rst_ni;
    assign valid_o    = valid_i;
    assign q_o        = d_i;
  end else begin : gen_stages
    logic             stage_valid [Depth+1];
    logic [Width-1:0] stage_data  [Depth+1];

    assign stage_valid[0] = valid_i;
    assign stage_data[0]  = d_i;

    for (genvar k = 0; k < Depth; k++) begin : gen_stage
      logic             valid_q;
      logic [Width-1:0] data_q;

      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) begin
          valid_q <= 1'b0;
        end else begin
          valid_q <= stage_valid[k];
        end
      end

      // Datapath register: loaded every cycle, read only with its valid bit; no reset needed.
      always_ff @(posedge clk_i) begin
        data_q <= stage_data[k];
      end

      assign stage_valid[k+1] = valid_q;
      assign stage_data[k+1]  = data_q;
    end

    assign valid_o = stage_valid[Depth];
    assign q_o     = stage_data[Depth];
  end

endmodule
