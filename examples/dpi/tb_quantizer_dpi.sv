// A testbench that checks a design against golden through DPI-C: the project's
// nibble_quantizer (16 lanes, every format) against nibble_golden_dpi's block quantizer.
//
// Every cycle it draws a block configuration (format, scale mode, rounding, B) and 16
// binary32 inputs from a seeded xorshift64 generator (+seed=<n>, printed), asks golden
// for the block's codes, scale code and per-tensor scales, drives the DUT with the
// same inputs (the per-tensor scales and, under stochastic rounding, golden's random
// bits included), and compares the DUT's outputs QuantLatency cycles later. It ends
// with $fatal on any mismatch or if nothing was compared, else prints the count and
// calls $finish. Clock and reset come from the harness (tb_main.cpp).
module tb_quantizer_dpi
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
    .sr_bits_i (sr_bits_q),
    .s_enc_i   (s_enc_q),
    .g_i       (g_q),
    .x_i       (x_q),
    .rand_i    (rand_q),
    .valid_o,
    .scale_o,
    .codes_o
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

  int unsigned issued, compared, nonzero, mismatches, dpi_checks;
  expected_t expected_q[$];

  initial begin
    if (!$value$plusargs("seed=%d", seed)) seed = 64'h5eed2026;
    $display("tb_quantizer_dpi: seed %0d = 0x%0h (+seed=<n>), golden C API version %0d", seed, seed,
             nibble_golden_api_version());
    rng_q = seed | 64'd1;  // xorshift's state must not be zero
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
    end else if (issued < NumBlocks) begin
      automatic longint unsigned r = xorshift64(rng_q);
      automatic int fmt = int'(32'(r[1:0]) % 3);
      automatic int mode = int'(r[3:2]);
      automatic int rounding = int'(r[4]);
      automatic int sr_bits = int'(r[7:5]) + 1;
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
      if (nibble_dpi_quantize_block16(fmt, mode, rounding, sr_bits, rng_q, stream, x, codes, scale, te, td)
            != NibbleOk) begin
        $fatal(1, "golden rejected block %0d: %s", issued, nibble_last_error());
      end
      if (nibble_dpi_sr_random16(rng_q, stream, sr_bits, random) != NibbleOk) begin
        $fatal(1, "golden's random bits for block %0d: %s", issued, nibble_last_error());
      end
      valid_q    <= 1'b1;
      format_q   <= format_e'(fmt);
      mode_q     <= scale_mode_e'(mode);
      rounding_q <= rounding_e'(rounding);
      sr_bits_q  <= SrBitsWidth'(sr_bits);
      s_enc_q    <= te;
      g_q        <= td;
      x_q        <= x;
      rand_q     <= random;
      want.scale = scale;
      want.codes = codes;
      expected_q.push_back(want);
      rng_q      <= r;
      issued     <= issued + 1;
    end else begin
      valid_q <= 1'b0;
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
    if (rst_ni && issued == NumBlocks && expected_q.size() == 0 && !valid_o) begin
      if (compared == 0 || nonzero == 0 || mismatches != 0 || dpi_checks == 0) begin
        $fatal(1, "tb_quantizer_dpi: FAIL: %0d blocks compared (%0d with non-zero codes), %0d mismatches, %0d DPI checks",
               compared, nonzero, mismatches, dpi_checks);
      end
      $display("tb_quantizer_dpi: PASS: %0d blocks compared, 0 mismatches (%0d with non-zero codes), %0d DPI element checks",
               compared, nonzero, dpi_checks);
      $finish;
    end
  end

endmodule
