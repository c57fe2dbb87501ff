// The tile at a second, non-square shape with 32 lanes, under its own top name so that its
// Verilated model (class Vtb_tile_wide) links beside Vnibble_tile into one test executable.
// The shape is set by tests/rtl/CMakeLists.txt (-G) and mirrored in tile_test.cpp.
module tb_tile_wide import nibble_pkg::*; import nibble_f32_pkg::*; #(
  parameter int unsigned Rows  = 8,
  parameter int unsigned Cols  = 4,
  parameter int unsigned Lanes = 32,
  localparam int unsigned RowWidth = Rows > 1 ? $clog2(Rows) : 1
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
  nibble_tile #(.Rows(Rows), .Cols(Cols), .Lanes(Lanes), .FormatMask(FormatMaskAll)) u_tile (.*);
endmodule
