// Operand staging for one A row or one B column of nibble_tile: a register file of Depth
// k-blocks (Lanes 4-bit codes and the block's scale code each), built from flops, one write
// and one read per cycle.
//
// Sized for double buffering: with the default Depth = 8, one panel of 4 k-blocks (K = 64
// elements, the K of one MXF4 MMA) is read into the array while the next is written. The
// scale slot is ScaleCodeWidth wide (binary32 block scales are the widest scale format), so
// an entry is Lanes * CodeWidth + ScaleCodeWidth bits. Nothing here depends on the element
// format: a code is 4 bits in every format, which is why the staging is synthesized once for
// all format masks.
//
// Read: the entry at raddr_i is registered (rdata_o in the next cycle), so the array's
// decoders start from a flop as they do behind the tile's input ports. Write: we_i writes
// wdata_i to waddr_i at the clock edge. Reading and writing one address in one cycle gives
// the old entry. The entries have no reset (a panel is written before it is read).
module nibble_operand_rf import nibble_pkg::*; #(
  parameter  int unsigned Lanes     = 16,
  parameter  int unsigned Depth     = 8,
  localparam int unsigned Width     = Lanes * CodeWidth + ScaleCodeWidth,
  localparam int unsigned AddrWidth = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic                 clk_i,
  input  logic                 we_i,
  input  logic [AddrWidth-1:0] waddr_i,
  input  logic [Width-1:0]     wdata_i,
  input  logic [AddrWidth-1:0] raddr_i,
  output logic [Width-1:0]     rdata_o
);

  logic [Width-1:0] mem_q [Depth];

  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
    rdata_o <= mem_q[raddr_i];
  end

endmodule
