// Calibration blocks for `nibble energy --calibration`: a scalar floating-point MAC,
//   acc <= RNE_binary32(acc + a * b)   (one rounding: a fused multiply-add into FP32)
// with a, b in a small binary format (E4M3 or BF16), so the project's 4-bit block-scaled MAC
// can be compared with an FP8 and a BF16 MAC built by the same flow (docs/area-energy.md).
//
// Numerics: exactly C's fmaf(a, b, acc) with a and b converted to float (exact for both
// formats), round to nearest even, binary32 subnormals kept (gradual underflow), overflow to
// infinity, and every NaN result the canonical quiet NaN 0x7FC00000.
//   E4M3 (OCP FP8): bias 7, subnormals, no infinities, S.1111.111 is NaN (max 448).
//   BF16 and any other (ExpBits, ManBits): IEEE-like, bias 2^(ExpBits-1) - 1, exponent field
//   all ones is infinity (mantissa 0) or NaN.
//
// Datapath (calib_fpmac_core, combinational; calib_fpmac registers it: one stage from the
// accumulator flop back to itself):
//   1. decode: significands with the hidden bit, exponents max(e, 1) - bias;
//   2. exact product of the significands (SigW x SigW bits), normalized by a leading-zero count
//      so its top bit is set (subnormal operands give leading zeros);
//   3. the operand with the higher top bit (accumulator or product) is the anchor; the other
//      one is shifted right into a 27-bit window (24 bits + 3 guard bits) below the anchor's
//      top, the bits shifted out ORed into one sticky bit;
//   4. add or subtract (negate if the result is negative: only with no shift);
//   5. normalize by a leading-zero count, the shift limited so the exponent stays >= -126
//      (gradual underflow), round to nearest even once, overflow to infinity;
//   6. zero / infinity / NaN cases selected last.
// Why 3 guard bits suffice: with d <= 3 the shifted operand stays inside the window and the
// sum is exact. With d >= 2 and a normalized anchor (the product always is; the accumulator
// when normal) the sum loses at most one leading bit, so the round bit is still a window bit
// and everything below it is sticky; with a subnormal accumulator as the anchor the result's
// rounding position is 2^-149, inside the window.
//
// Plain Verilog-2005 for Yosys 0.23 (`nibble_synth.py --source`). Lint:
// `verilator --lint-only -Wall -Wno-DECLFILENAME` (two modules in one file, as calib_blocks.v).
module calib_fpmac_core #(
  parameter ExpBits = 4,  // operand exponent bits (E4M3: 4, BF16: 8; at most 8)
  parameter ManBits = 3   // operand mantissa bits (E4M3: 3, BF16: 7; at most 10)
) (
  input  [ExpBits+ManBits:0] a_i,
  input  [ExpBits+ManBits:0] b_i,
  input  [31:0]              acc_i,  // binary32
  output [31:0]              sum_o   // RNE_binary32(acc_i + a_i * b_i)
);
  localparam OpW   = 1 + ExpBits + ManBits;
  localparam Bias  = (1 << (ExpBits - 1)) - 1;
  localparam SigW  = ManBits + 1;             // operand significand with the hidden bit
  localparam ProdW = 2 * SigW;                // exact product of two significands
  localparam NoInf = ExpBits == 4 && ManBits == 3;  // OCP E4M3: no infinities, one NaN code
  localparam WinW  = 24 + 3;                  // alignment window: FP32 significand + 3 guard bits
  localparam SumW  = WinW + 2;                // carry bit, window, sticky bit
  // Exponents (of a significand's top bit) are XW-bit two's complement: with ExpBits <= 8 the
  // product's top lies in [-274, 257], the accumulator's in [-126, 127], their difference in
  // [-383, 401] and the biased result exponent below 386, all inside +-512.
  localparam XW    = 10;

  // ---- decode --------------------------------------------------------------------------
  // m: an operand's exponent and mantissa fields (the sign apart)
  function is_nan(input [OpW-2:0] m);
    is_nan = NoInf ? &m : (&m[OpW-2:ManBits] & |m[ManBits-1:0]);
  endfunction
  function is_inf(input [OpW-2:0] m);
    is_inf = !NoInf && &m[OpW-2:ManBits] && ~|m[ManBits-1:0];
  endfunction
  function [SigW-1:0] sig(input [OpW-2:0] m);  // hidden bit = exponent field non-zero
    sig = {|m[OpW-2:ManBits], m[ManBits-1:0]};
  endfunction
  function [XW-1:0] exp_eff(input [ExpBits-1:0] e);  // max(exponent field, 1), biased
    exp_eff = {{(XW-ExpBits){1'b0}}, e | {{(ExpBits-1){1'b0}}, ~|e}};
  endfunction
  // Leading zeros of v (SumW when v is zero).
  function [4:0] lzc(input [SumW-1:0] v);
    integer i;
    reg found;
    begin
      lzc = 5'd0;
      found = 1'b0;
      for (i = SumW - 1; i >= 0; i = i - 1) begin
        found = found | v[i];
        if (!found) lzc = lzc + 5'd1;
      end
    end
  endfunction

  wire [OpW-2:0] a_m = a_i[OpW-2:0], b_m = b_i[OpW-2:0];
  wire a_nan = is_nan(a_m), b_nan = is_nan(b_m);
  wire prod_inf  = is_inf(a_m) | is_inf(b_m);
  wire prod_zero = ~|a_m | ~|b_m;
  wire prod_s    = a_i[OpW-1] ^ b_i[OpW-1];

  wire       acc_s    = acc_i[31];
  wire [7:0] acc_e    = acc_i[30:23];
  wire       acc_inf  = &acc_e & ~|acc_i[22:0];
  wire       acc_nan  = &acc_e & |acc_i[22:0];
  wire       acc_zero = ~|acc_i[30:0];
  wire [23:0] acc_sig = {|acc_e, acc_i[22:0]};
  // top bit of acc_sig is worth 2^(max(e, 1) - 127)
  wire [XW-1:0] acc_top = {{(XW-8){1'b0}}, acc_e | {7'b0, ~|acc_e}} - 127;

  // ---- exact product, normalized -------------------------------------------------------
  wire [ProdW-1:0] prod     = sig(a_m) * sig(b_m);
  wire [4:0]       prod_lz  = lzc({prod, {(SumW - ProdW){1'b0}}});
  wire [ProdW-1:0] prod_n   = prod << prod_lz;
  wire [23:0]      prod_sig = {prod_n, {(24 - ProdW){1'b0}}};
  // prod = sig_a * sig_b * 2^(ea + eb - 2 Bias - 2 ManBits); its bit ProdW-1 is worth
  // 2^(ea + eb - 2 Bias + 1), and normalizing moves the top down by prod_lz.
  wire [XW-1:0] prod_top = exp_eff(a_m[OpW-2:ManBits]) + exp_eff(b_m[OpW-2:ManBits]) - (2 * Bias - 1) - {{(XW-5){1'b0}}, prod_lz};

  // ---- align: anchor = the operand with the higher top; the other into the window ------
  wire [XW-1:0] diff  = acc_top - prod_top;
  wire          acc_big = ~diff[XW-1];
  wire [XW-1:0] gap  = acc_big ? diff : -diff;
  wire [4:0]    shamt = (gap > WinW) ? WinW : gap[4:0];
  wire [23:0]   big_sig   = acc_big ? acc_sig : prod_sig;
  wire [23:0]   small_sig = acc_big ? prod_sig : acc_sig;
  wire          big_s     = acc_big ? acc_s : prod_s;
  wire [XW-1:0] anchor    = acc_big ? acc_top : prod_top;
  wire [2*WinW-1:0] small_sh = {small_sig, {(2 * WinW - 24){1'b0}}} >> shamt;
  wire              sticky   = |small_sh[WinW-1:0];

  // ---- add / subtract ------------------------------------------------------------------
  // Bit SumW-2 of both operands is worth 2^anchor; bit 0 is the sticky bit.
  wire          eff_sub = acc_s ^ prod_s;
  wire [SumW-1:0] big_x   = {1'b0, big_sig, 4'b0000};
  wire [SumW-1:0] small_x = {1'b0, small_sh[2*WinW-1:WinW], sticky};
  wire [SumW:0]   raw = eff_sub ? {1'b0, big_x} - {1'b0, small_x} : {1'b0, big_x} + {1'b0, small_x};
  wire            neg = raw[SumW];                 // |small| > |big|: only when shamt = 0
  wire [SumW-1:0] mag = neg ? -raw[SumW-1:0] : raw[SumW-1:0];
  wire            sum_s = big_s ^ neg;

  // ---- normalize (gradual underflow), round to nearest even -----------------------------
  wire [4:0]    lz   = lzc(mag);
  // shifting left by `room` puts 2^-126 on the top bit; anchor >= -126, so room >= 1
  wire [XW-1:0] room = anchor + 127;
  wire [4:0]    ls   = (room < {{(XW-5){1'b0}}, lz}) ? room[4:0] : lz;
  wire [SumW-1:0] norm = mag << ls;
  // biased exponent: top bit set -> normal (>= 1); clear -> subnormal (0)
  wire [XW-1:0] be = norm[SumW-1] ? anchor + 128 - {{(XW-5){1'b0}}, ls} : {XW{1'b0}};
  wire          round_up = norm[4] & (|norm[3:0] | norm[5]);
  wire [30:0]   rounded  = {be[7:0], norm[SumW-2:5]} + {30'b0, round_up};  // carries into exponent
  wire          overflow = be >= 255;

  // ---- special cases -------------------------------------------------------------------
  assign sum_o =
      (a_nan | b_nan | acc_nan | (prod_inf & prod_zero) | (prod_inf & acc_inf & (prod_s ^ acc_s)))
          ? 32'h7FC0_0000
    : prod_inf  ? {prod_s, 8'hFF, 23'b0}
    : acc_inf   ? acc_i
    : prod_zero ? (acc_zero ? {acc_s & prod_s, 31'b0} : acc_i)   // exact; -0 + -0 = -0
    : ~|mag     ? 32'b0                                            // exact cancellation: +0
    : overflow  ? {sum_s, 8'hFF, 23'b0}
    : {sum_s, rounded};                                            // rounding may reach Inf
endmodule

// The accumulator register around calib_fpmac_core: acc <= fma(a, b, acc) every cycle,
// cleared by the asynchronous active-low reset.
module calib_fpmac #(
  parameter ExpBits = 4,
  parameter ManBits = 3
) (
  input                      clk_i,
  input                      rst_ni,
  input  [ExpBits+ManBits:0] a_i,
  input  [ExpBits+ManBits:0] b_i,
  output [31:0]              acc_o
);
  reg  [31:0] acc_q;
  wire [31:0] acc_d;

  calib_fpmac_core #(.ExpBits(ExpBits), .ManBits(ManBits)) u_core (
    .a_i(a_i), .b_i(b_i), .acc_i(acc_q), .sum_o(acc_d));

  always @(posedge clk_i or negedge rst_ni)
    if (!rst_ni) acc_q <= 32'b0;
    else         acc_q <= acc_d;

  assign acc_o = acc_q;
endmodule
