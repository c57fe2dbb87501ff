// A testbench that checks designs against golden through DPI-C: the project's block
// quantizer and block dot-product unit (16 lanes, every format) against nibble_golden_dpi.
//
// Every cycle, from a seeded xorshift64 generator (+seed=<n>, printed):
//   nibble_quantizer  a block configuration (format, scale mode, rounding, B, and the zero
//                     and non-finite policies) and 16
//                     binary32 inputs; golden gives the codes, scale code and per-tensor
//                     scales, and the DUT gets the same inputs (the per-tensor scales and,
//                     under stochastic rounding, golden's random bits included);
//   nibble_dpu        two random blocks of codes with random formats, scale formats and
//                     scale codes, in dot products of 1..4 blocks; golden's block step
//                     gives the accumulator after each block.
// Each DUT's outputs are compared with golden's in order, QuantLatency / DpuLatency cycles
// later (NaNs by NaN-ness: golden's host NaNs are not canonical, the RTL's are). The run
// ends with $fatal on any mismatch or if either DUT compared nothing, else prints the
// counts and calls $finish. Clock and reset come from the harness (tb_main.cpp).
module tb_golden_dpi
  import nibble_pkg::*;
  import nibble_f32_pkg::*;
  import nibble_quant_pkg::*;
  import nibble_golden_dpi::*;
#(
  parameter int unsigned NumBlocks = 4000
) (
  input logic clk_i,
  input logic rst_ni
);

  localparam int unsigned Lanes = 16;

  typedef struct packed {
    logic [ScaleCodeWidth-1:0]          scale;
    logic [Lanes-1:0][CodeWidth-1:0]    codes;
  } expected_t;

  // --- The DUT ---------------------------------------------------------------------------
  logic                              valid_q;
  format_e                           format_q;
  scale_mode_e                       mode_q;
  rounding_e                         rounding_q;
  zero_policy_e                      zero_q;
  nonfinite_policy_e                 nonfinite_q;
  logic [SrBitsWidth-1:0]            sr_bits_q;
  f32_t                              s_enc_q, g_q;
  logic [Lanes-1:0][F32Width-1:0]    x_q;
  logic [Lanes-1:0][SrBitsMax-1:0]   rand_q;
  logic                              valid_o;
  logic [ScaleCodeWidth-1:0]         scale_o;
  logic [Lanes-1:0][CodeWidth-1:0]   codes_o;

  nibble_quantizer #(
    .Lanes(Lanes)
  ) u_dut (
    .clk_i,
    .rst_ni,
    .valid_i   (valid_q),
    .format_i  (format_q),
    .mode_i    (mode_q),
    .rounding_i(rounding_q),
    .zero_i     (zero_q),
    .nonfinite_i(nonfinite_q),
    .sr_bits_i (sr_bits_q),
    .s_enc_i   (s_enc_q),
    .g_i       (g_q),
    .x_i       (x_q),
    .rand_i    (rand_q),
    .valid_o,
    .scale_o,
    .codes_o
  );

  logic                              dpu_valid_q, dpu_first_q, dpu_last_q;
  format_e                           dpu_format_a_q, dpu_format_b_q;
  scale_format_e                     dpu_scale_format_a_q, dpu_scale_format_b_q;
  logic [Lanes-1:0][CodeWidth-1:0]   dpu_codes_a_q, dpu_codes_b_q;
  logic [ScaleCodeWidth-1:0]         dpu_scale_a_q, dpu_scale_b_q;
  logic                              acc_valid_o, acc_last_o;
  f32_t                              acc_o;

  nibble_dpu #(
    .Lanes(Lanes)
  ) u_dpu (
    .clk_i,
    .rst_ni,
    .valid_i         (dpu_valid_q),
    .first_i         (dpu_first_q),
    .last_i          (dpu_last_q),
    .format_a_i      (dpu_format_a_q),
    .format_b_i      (dpu_format_b_q),
    .scale_format_a_i(dpu_scale_format_a_q),
    .scale_format_b_i(dpu_scale_format_b_q),
    .codes_a_i       (dpu_codes_a_q),
    .codes_b_i       (dpu_codes_b_q),
    .scale_a_i       (dpu_scale_a_q),
    .scale_b_i       (dpu_scale_b_q),
    .acc_valid_o,
    .acc_last_o,
    .acc_o
  );

  // --- Seeded stimulus ---------------------------------------------------------------------
  longint unsigned seed;
  longint unsigned rng_q;

  function automatic longint unsigned xorshift64(input longint unsigned s);
    longint unsigned x = s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  endfunction

  // Signed values over 2^-24..2^24 with zeros, grid ties and non-finite values mixed in.
  function automatic logic [31:0] stimulus_value(input longint unsigned r);
    logic [31:0] v;
    unique case (r[3:0])
      4'd0:    v = {r[4], 31'd0};                                  // +-0
      4'd1:    v = r[5] ? {r[4], 8'hFF, 23'd0} : 32'h7FC0_0000;    // +-Inf or NaN (rare: one lane)
      4'd2:    v = {r[4], 8'(126 + 32'(r[7:5])), r[30:29], 21'd0};      // few significant bits: ties
      default: v = {r[4], 8'(103 + 32'(r[15:8]) % 48), r[62:40]};
    endcase
    return v;
  endfunction

  // A random scale code of a scale format: any 8-bit code (NaN codes included), or an FP32
  // scale between 2^-27 and 2^27.
  function automatic logic [31:0] stimulus_scale(input int scale_format, input longint unsigned r);
    if (scale_format == NibbleScaleFmtFP32) return {1'b0, 8'(100 + 32'(r[15:8]) % 55), r[38:16]};
    return {24'd0, r[7:0]};
  endfunction

  function automatic bit same_f32(input logic [31:0] a, input logic [31:0] b);
    return a == b || (a[30:23] == 8'hFF && a[22:0] != 0 && b[30:23] == 8'hFF && b[22:0] != 0);
  endfunction

  int unsigned issued, compared, nonzero, mismatches, dpi_checks;
  int unsigned dpu_compared, dpu_nonzero, dpu_mismatches;
  int unsigned dpu_blocks_left_q;
  logic [31:0] golden_acc_q;
  expected_t expected_q[$];
  logic [32:0] expected_acc_q[$];  // {last, accumulator}

  initial begin
    if (!$value$plusargs("seed=%d", seed)) seed = 64'h5eed2026;
    $display("tb_golden_dpi: seed %0d = 0x%0h (+seed=<n>), golden C API version %0d", seed, seed,
             nibble_golden_api_version());
    rng_q = seed | 64'd1;  // xorshift's state must not be zero
    // The DPI package's constants name golden's values, and equal the RTL packages' enums.
    if (nibble_format_name(NibbleFmtE2M1) != "e2m1" || nibble_format_name(NibbleFmtE1M2) != "e1m2" ||
        nibble_format_name(NibbleFmtInt4) != "int4" || nibble_scale_format_name(NibbleScaleFmtE4M3) != "e4m3" ||
        nibble_scale_format_name(NibbleScaleFmtUE8M0) != "ue8m0" ||
        nibble_scale_format_name(NibbleScaleFmtFP32) != "fp32" ||
        nibble_scale_mode_name(NibbleScaleModeFP32) != "fp32" ||
        nibble_scale_mode_name(NibbleScaleModeNVFP4) != "nvfp4" ||
        nibble_scale_mode_name(NibbleScaleModeMXFloor) != "mx-floor" ||
        nibble_scale_mode_name(NibbleScaleModeMXCeil) != "mx-ceil" ||
        nibble_rounding_name(NibbleRoundNearestEven) != "rne" ||
        nibble_rounding_name(NibbleRoundStochastic) != "sr" ||
        nibble_zero_policy_name(NibbleZeroPositive) != "positive" ||
        nibble_zero_policy_name(NibbleZeroSigned) != "signed" ||
        nibble_nonfinite_policy_name(NibbleNonFiniteFinite) != "finite" ||
        nibble_nonfinite_policy_name(NibbleNonFinitePropagate) != "propagate") begin
      $fatal(1, "nibble_golden_dpi's constants do not match golden's names");
    end
    if (NibbleFmtE2M1 != int'(FmtE2M1) || NibbleFmtE1M2 != int'(FmtE1M2) || NibbleFmtInt4 != int'(FmtInt4) ||
        NibbleScaleFmtE4M3 != int'(ScaleE4M3) || NibbleScaleFmtUE8M0 != int'(ScaleUE8M0) ||
        NibbleScaleFmtFP32 != int'(ScaleFP32) || NibbleScaleModeFP32 != int'(ModeFP32) ||
        NibbleScaleModeNVFP4 != int'(ModeNVFP4) || NibbleScaleModeMXFloor != int'(ModeMXFloor) ||
        NibbleScaleModeMXCeil != int'(ModeMXCeil) || NibbleRoundNearestEven != int'(RoundNearestEven) ||
        NibbleRoundStochastic != int'(RoundStochastic) || NibbleZeroPositive != int'(ZeroPositive) ||
        NibbleZeroSigned != int'(ZeroSigned) || NibbleNonFiniteFinite != int'(NonFiniteFinite) ||
        NibbleNonFinitePropagate != int'(NonFinitePropagate)) begin
      $fatal(1, "nibble_golden_dpi's constants differ from nibble_pkg's and nibble_quant_pkg's enums");
    end
    // The element conversions through DPI: every code of every format decodes to a value
    // that encodes back to the same code (INT4 -8 saturates to -7; -0 is code 0x8).
    for (int f = 0; f < 3; f++) begin
      for (int c = 0; c < 16; c++) begin
        int unsigned bits;
        int back;
        // One call per statement: a function's output arguments are written back after the
        // statement that calls it, so a second call in the same expression would see old values.
        if (nibble_dpi_element_decode(f, c, bits) != NibbleOk) begin
          $fatal(1, "element decode failed: %s", nibble_last_error());
        end
        if (nibble_dpi_element_encode(f, bits, NibbleRoundNearestEven, 0, 8, back) != NibbleOk) begin
          $fatal(1, "element encode failed: %s", nibble_last_error());
        end
        if (back != c && !(f == NibbleFmtInt4 && c == 8 && back == 9)) begin
          $fatal(1, "format %0d code %h decodes to %h, which encodes to %h", f, c, bits, back);
        end
        dpi_checks++;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
      dpu_valid_q <= 1'b0;
    end else if (issued < NumBlocks) begin
      automatic longint unsigned r = xorshift64(rng_q);
      automatic int fmt = int'(32'(r[1:0]) % 3);
      automatic int mode = int'(r[3:2]);
      automatic int rounding = int'(r[4]);
      automatic int sr_bits = int'(r[7:5]) + 1;
      automatic int zero = int'(r[8]);
      automatic int nonfinite = int'(r[9]);
      automatic int unsigned stream = r[47:16];
      automatic bit [15:0][31:0] x;
      automatic bit [15:0][3:0] codes;
      automatic bit [15:0][7:0] random;
      automatic int unsigned scale, te, td;
      automatic expected_t want;
      for (int i = 0; i < Lanes; i++) begin
        r = xorshift64(r);
        x[i] = stimulus_value(r);
        // Non-finite values in one block of eight, so most blocks have a finite scale.
        if (x[i][30:23] == 8'hFF && issued % 8 != 0) x[i] = 32'h3F80_0000;
      end
      if (nibble_dpi_quantize_block16_with_policy(fmt, mode, rounding, sr_bits, zero, nonfinite, rng_q, stream, x,
                                                  codes, scale, te, td) != NibbleOk) begin
        $fatal(1, "golden rejected block %0d: %s", issued, nibble_last_error());
      end
      if (nibble_dpi_sr_random16(rng_q, stream, sr_bits, random) != NibbleOk) begin
        $fatal(1, "golden's random bits for block %0d: %s", issued, nibble_last_error());
      end
      valid_q    <= 1'b1;
      format_q   <= format_e'(fmt);
      mode_q     <= scale_mode_e'(mode);
      rounding_q <= rounding_e'(rounding);
      zero_q     <= zero_policy_e'(zero);
      nonfinite_q <= nonfinite_policy_e'(nonfinite);
      sr_bits_q  <= SrBitsWidth'(sr_bits);
      s_enc_q    <= te;
      g_q        <= td;
      x_q        <= x;
      rand_q     <= random;
      want.scale = scale;
      want.codes = codes;
      expected_q.push_back(want);

      // The DPU: one block of a dot product of 1..4 blocks, golden's accumulator beside it.
      begin
        automatic bit first = dpu_blocks_left_q == 0;
        automatic int unsigned left = first ? 32'(r[49:48]) : dpu_blocks_left_q - 1;
        automatic int fa, fb, sfa, sfb;
        automatic bit [15:0][3:0] ca, cb;
        automatic int unsigned sa, sb, acc;
        r = xorshift64(r);
        fa = int'(32'(r[1:0]) % 3);
        fb = int'(32'(r[3:2]) % 3);
        sfa = int'(32'(r[5:4]) % 3);
        sfb = int'(32'(r[7:6]) % 3);
        ca = r;
        r = xorshift64(r);
        cb = r;
        r = xorshift64(r);
        sa = stimulus_scale(sfa, r);
        r = xorshift64(r);
        sb = stimulus_scale(sfb, r);
        if (nibble_dpi_block_dot16(fa, sfa, ca, sa, fb, sfb, cb, sb, first ? 32'd0 : golden_acc_q, acc)
              != NibbleOk) begin
          $fatal(1, "golden rejected DPU block %0d: %s", issued, nibble_last_error());
        end
        dpu_valid_q          <= 1'b1;
        dpu_first_q          <= first;
        dpu_last_q           <= left == 0;
        dpu_format_a_q       <= format_e'(fa);
        dpu_format_b_q       <= format_e'(fb);
        dpu_scale_format_a_q <= scale_format_e'(sfa);
        dpu_scale_format_b_q <= scale_format_e'(sfb);
        dpu_codes_a_q        <= ca;
        dpu_codes_b_q        <= cb;
        dpu_scale_a_q        <= sa;
        dpu_scale_b_q        <= sb;
        dpu_blocks_left_q    <= left;
        golden_acc_q         <= acc;
        expected_acc_q.push_back({left == 0, acc});
      end

      rng_q      <= r;
      issued     <= issued + 1;
    end else begin
      valid_q <= 1'b0;
      dpu_valid_q <= 1'b0;
    end
  end

  // --- Checking --------------------------------------------------------------------------
  always_ff @(posedge clk_i) begin
    if (rst_ni && valid_o) begin
      automatic expected_t want = expected_q.pop_front();
      if (scale_o !== want.scale || codes_o !== want.codes) begin
        mismatches <= mismatches + 1;
        $display("MISMATCH block %0d: scale %h codes %h, golden scale %h codes %h", compared, scale_o,
                 codes_o, want.scale, want.codes);
      end
      compared <= compared + 1;
      if (want.codes != '0) nonzero <= nonzero + 1;
    end
    if (rst_ni && acc_valid_o) begin
      automatic logic [32:0] want = expected_acc_q.pop_front();
      if (!same_f32(acc_o, want[31:0]) || acc_last_o != want[32]) begin
        dpu_mismatches <= dpu_mismatches + 1;
        $display("MISMATCH DPU block %0d: acc %h last %b, golden %h last %b", dpu_compared, acc_o, acc_last_o,
                 want[31:0], want[32]);
      end
      dpu_compared <= dpu_compared + 1;
      if (want[30:0] != 0) dpu_nonzero <= dpu_nonzero + 1;
    end
    if (rst_ni && issued == NumBlocks && expected_q.size() == 0 && expected_acc_q.size() == 0 && !valid_o &&
        !acc_valid_o) begin
      if (compared == 0 || nonzero == 0 || mismatches != 0 || dpi_checks == 0 || dpu_compared == 0 ||
          dpu_nonzero == 0 || dpu_mismatches != 0) begin
        $display("tb_golden_dpi: quantizer %0d blocks compared (%0d with non-zero codes), %0d mismatches",
                 compared, nonzero, mismatches);
        $display("tb_golden_dpi: DPU %0d blocks compared (%0d non-zero), %0d mismatches", dpu_compared,
                 dpu_nonzero, dpu_mismatches);
        $fatal(1, "tb_golden_dpi: FAIL (%0d DPI element checks)", dpi_checks);
      end
      $display("tb_golden_dpi: PASS: quantizer %0d blocks compared, 0 mismatches (%0d with non-zero codes); DPU %0d blocks compared, 0 mismatches (%0d non-zero); %0d DPI element checks",
               compared, nonzero, dpu_compared, dpu_nonzero, dpi_checks);
      $finish;
    end
  end

endmodule
