// Calibration blocks for `nibble energy --calibration`: the integer operators of the published
// per-operation energy tables (an N-bit adder and an N x N multiplier), synthesized and
// simulated by the same flow as the DPU.
module calib_add #(parameter N = 8) (
  input  [N-1:0] a,
  input  [N-1:0] b,
  output [N-1:0] s
);
  assign s = a + b;
endmodule

module calib_mul #(parameter N = 8) (
  input  [N-1:0]   a,
  input  [N-1:0]   b,
  output [2*N-1:0] p
);
  assign p = a * b;
endmodule
