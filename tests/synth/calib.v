// Calibration blocks for the area flow (tests/synth): gate counts known from textbooks.
// rca: N-bit adder with carry in and out (ripple carry: N full adders).
module rca #(parameter N = 8) (
  input  [N-1:0] a,
  input  [N-1:0] b,
  input          ci,
  output [N-1:0] s,
  output         co
);
  assign {co, s} = a + b + ci;
endmodule

// mul4: 4 x 4 unsigned array multiplier (16 AND2 partial products, 12 adder cells).
module mul4 (
  input  [3:0] a,
  input  [3:0] b,
  output [7:0] p
);
  assign p = a * b;
endmodule

// regr: N flops with asynchronous active-low reset (the RTL's valid bits and accumulator).
module regr #(parameter N = 8) (
  input              clk,
  input              rst_n,
  input      [N-1:0] d,
  output reg [N-1:0] q
);
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) q <= {N{1'b0}};
    else        q <= d;
  end
endmodule
