// The arithmetic of the block dot-product unit on decoded operands: exact block sum, scale
// product, one rounding, accumulation, in the three pipeline stages nibble_dpu documents.
//
// Operands arrive decoded: per lane a sign and a magnitude field in the form of LaneDesign
// (nibble_decode with the same FormatMask and LaneDesign), per operand its element format and
// the decode scale as binary32 (nibble_scale_decode). nibble_dpu wraps it with its own
// decoders; nibble_tile shares one set of decoders per A row and per B column among the cores
// of the array.
//
// Per block:  P = sum_i (-1)^(na_i ^ nb_i) |qa_i| * |qb_i|      exact (nibble_lane, tree)
//             s = fl(sa * sb)                                   nibble_f32_mul
//             r = fl(P * 2^(ua + ub) * s)                       nibble_f32_round, once
//             acc = fl((first ? +0 : acc) + r)                  nibble_f32_add
// where |q| is in units of 2^u: u = unit_exp(FormatMask) for every format with
// LaneCommonUnit (a constant), u = lsb_exp(format) otherwise (golden's block_product:
// sf.exp + lsb_exp(fa) + lsb_exp(fb)), added to the block exponent in stage 2. With
// late_sign the lanes pass ~|p| for negative products and stage 1 adds their count. With
// raw_select the decoders do not tie off a format outside FormatMask, and stage 2 takes P = 0
// for a block with one (the other designs' decoders give zero lanes).
// A non-finite s gives r = NaN (s NaN, or s = +-Inf with P = 0) or +-Inf, as golden's
// block_product does; NaNs are the canonical F32QuietNaN.
//
// Timing: a block with valid_i in cycle t is accumulated into acc_o, with acc_valid_o, in
// cycle t + DpuLatency (3): stage 1 products, tree and s; stage 2 the rounding of P * s;
// stage 3 the accumulation. Valid only, one block per cycle, no stalls.
module nibble_dpu_core import nibble_pkg::*; import nibble_f32_pkg::*; #(
  parameter int unsigned  Lanes      = 16,
  parameter format_mask_t FormatMask = FormatMaskAll,
  parameter lane_design_e LaneDesign = DefaultLaneDesign,
  localparam int unsigned MagWidth   = lane_mag_width(LaneDesign, FormatMask)
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,

  input  logic                           valid_i,
  input  logic                           first_i,    // first block of a dot product
  input  logic                           last_i,     // last block of a dot product
  input  format_e                        format_a_i, // element formats (own-unit designs)
  input  format_e                        format_b_i,
  input  logic [Lanes-1:0]               neg_a_i,    // lane i is element k0 + i
  input  logic [Lanes-1:0][MagWidth-1:0] mag_a_i,
  input  logic [Lanes-1:0]               neg_b_i,
  input  logic [Lanes-1:0][MagWidth-1:0] mag_b_i,
  input  f32_t                           scale_a_i,  // decode scales
  input  f32_t                           scale_b_i,

  output logic                           acc_valid_o,
  output logic                           acc_last_o,
  output f32_t                           acc_o
);

`include "nibble_assert.svh"

  localparam int unsigned ProdWidth = lane_product_width(LaneDesign, FormatMask);
  localparam int unsigned PsumWidth = lane_partial_sum_width(LaneDesign, FormatMask, Lanes);
  localparam logic        OwnUnit   = LaneDesignTable[LaneDesign].own_unit != 0;
  localparam logic        LateSign  = LaneDesignTable[LaneDesign].late_sign != 0;
  localparam logic        RawSelect = LaneDesignTable[LaneDesign].raw_select != 0;
  // |P| * significand(s), exact.
  localparam int unsigned BlockMagWidth = PsumWidth + F32SigWidth;
  // Exponent of the block product's LSB: scale_exp - 150 + ua + ub, within [-154, 104].
  localparam int unsigned BlockExpWidth = 10;
  // The constant part: -150, plus 2 * unit_exp for the common unit.
  localparam logic signed [BlockExpWidth-1:0] BlockExpOffset =
      BlockExpWidth'(OwnUnit ? 0 : 2 * unit_exp(FormatMask)) -
      BlockExpWidth'(F32Bias + F32ManBits);

  // ---------------------------------------------------------------------------------------
  // Stage 1: exact block sum and scale product
  // ---------------------------------------------------------------------------------------
  logic signed [ProdWidth-1:0] prods [Lanes];
  logic [Lanes-1:0]            late_neg;
  logic signed [PsumWidth-1:0] tree_sum, psum;
  f32_t                        scale;

  for (genvar i = 0; i < Lanes; i++) begin : gen_lane
    nibble_lane #(
      .FormatMask(FormatMask),
      .LaneDesign(LaneDesign)
    ) u_lane (
      .neg_a_i   (neg_a_i[i]),
      .mag_a_i   (mag_a_i[i]),
      .neg_b_i   (neg_b_i[i]),
      .mag_b_i   (mag_b_i[i]),
      .prod_o    (prods[i]),
      .late_neg_o(late_neg[i])
    );
  end

  nibble_adder_tree #(
    .Lanes  (Lanes),
    .InWidth(ProdWidth)
  ) u_adder_tree (
    .operands_i(prods),
    .sum_o     (tree_sum)
  );

  // late_sign: each negative lane passed -|p| - 1; P is exact in PsumWidth bits, so the sum
  // modulo 2^PsumWidth is P.
  if (LateSign) begin : gen_late_sign
    logic [$clog2(Lanes+1)-1:0] num_late_neg;
    always_comb begin
      num_late_neg = '0;
      for (int unsigned i = 0; i < Lanes; i++) begin
        num_late_neg = num_late_neg + $clog2(Lanes+1)'(late_neg[i]);
      end
      psum = tree_sum + PsumWidth'(num_late_neg);
    end
  end else begin : gen_sign
    logic unused_late_neg;
    assign unused_late_neg = ^late_neg;
    assign psum = tree_sum;
  end

  nibble_f32_mul u_scale_mul (
    .a_i  (scale_a_i),
    .b_i  (scale_b_i),
    .f32_o(scale)
  );

  logic                        s1_valid_d, s1_valid_q, s1_first_d, s1_first_q;
  logic                        s1_last_d, s1_last_q;
  logic signed [PsumWidth-1:0] s1_psum_d, s1_psum_q;
  f32_t                        s1_scale_d, s1_scale_q;
  format_e                     s1_format_a_d, s1_format_a_q, s1_format_b_d, s1_format_b_q;

  always_comb begin
    s1_valid_d    = valid_i;
    s1_first_d    = valid_i ? first_i : s1_first_q;
    s1_last_d     = valid_i ? last_i : s1_last_q;
    s1_psum_d     = valid_i ? psum : s1_psum_q;
    s1_scale_d    = valid_i ? scale : s1_scale_q;
    s1_format_a_d = valid_i ? format_a_i : s1_format_a_q;
    s1_format_b_d = valid_i ? format_b_i : s1_format_b_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_valid_q <= 1'b0;
    end else begin
      s1_valid_q <= s1_valid_d;
    end
  end

  // Datapath registers: loaded with valid, never read without it; no reset needed.
  always_ff @(posedge clk_i) begin
    s1_first_q    <= s1_first_d;
    s1_last_q     <= s1_last_d;
    s1_psum_q     <= s1_psum_d;
    s1_scale_q    <= s1_scale_d;
    s1_format_a_q <= s1_format_a_d;
    s1_format_b_q <= s1_format_b_d;
  end

  // The formats' unit exponents, ua + ub (own-unit designs; constant-folded to zero and the
  // format registers removed by synthesis for LaneCommonUnit).
  logic signed [BlockExpWidth-1:0] units_exp;

  always_comb begin
    units_exp = '0;
    if (OwnUnit) begin
      for (int unsigned f = 0; f < NumFormats; f++) begin
        if (FormatMask[f] && s1_format_a_q == format_e'(f)) begin
          units_exp = units_exp + BlockExpWidth'(lsb_exp(format_e'(f)));
        end
        if (FormatMask[f] && s1_format_b_q == format_e'(f)) begin
          units_exp = units_exp + BlockExpWidth'(lsb_exp(format_e'(f)));
        end
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // Stage 2: r = round(P * 2^(ua + ub) * s)
  // ---------------------------------------------------------------------------------------
  logic                              block_neg, scale_nan, scale_inf;
  logic signed [PsumWidth-1:0]       block_psum;
  logic [PsumWidth-1:0]              psum_abs;
  logic [BlockMagWidth-1:0]          block_mag;
  logic signed [BlockExpWidth-1:0]   block_exp;
  f32_t                              block_rounded, block_product;

  always_comb begin
    block_psum = s1_psum_q;
    // raw_select decoders do not tie off a format outside FormatMask: its block is zero here.
    if (RawSelect && !(format_enabled(FormatMask, s1_format_a_q) &&
                       format_enabled(FormatMask, s1_format_b_q))) begin
      block_psum = '0;
    end
    psum_abs  = block_psum[PsumWidth-1] ? PsumWidth'(-block_psum) : PsumWidth'(block_psum);
    block_neg = block_psum[PsumWidth-1] ^ s1_scale_q[F32Width-1];
    scale_nan = f32_is_nan(s1_scale_q[F32Width-2:0]);
    scale_inf = f32_is_inf(s1_scale_q[F32Width-2:0]);
    block_mag = BlockMagWidth'(psum_abs) *
                BlockMagWidth'(f32_significand(s1_scale_q[F32Width-2:0]));
    block_exp = BlockExpWidth'(f32_scale_exp(s1_scale_q[F32Width-2-:F32ExpBits])) +
                BlockExpOffset + units_exp;
  end

  nibble_f32_round #(
    .MagWidth(BlockMagWidth),
    .ExpWidth(BlockExpWidth)
  ) u_block_round (
    .neg_i(block_neg),
    .mag_i(block_mag),
    .exp_i(block_exp),
    .f32_o(block_rounded)
  );

  always_comb begin
    block_product = block_rounded;
    if (scale_nan || (scale_inf && psum_abs == '0)) begin
      block_product = F32QuietNaN;
    end else if (scale_inf) begin
      block_product = {block_neg, F32PosInf[F32Width-2:0]};
    end
  end

  logic s2_valid_d, s2_valid_q, s2_first_d, s2_first_q, s2_last_d, s2_last_q;
  f32_t s2_product_d, s2_product_q;

  always_comb begin
    s2_valid_d   = s1_valid_q;
    s2_first_d   = s1_valid_q ? s1_first_q : s2_first_q;
    s2_last_d    = s1_valid_q ? s1_last_q : s2_last_q;
    s2_product_d = s1_valid_q ? block_product : s2_product_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s2_valid_q <= 1'b0;
    end else begin
      s2_valid_q <= s2_valid_d;
    end
  end

  always_ff @(posedge clk_i) begin
    s2_first_q   <= s2_first_d;
    s2_last_q    <= s2_last_d;
    s2_product_q <= s2_product_d;
  end

  // ---------------------------------------------------------------------------------------
  // Stage 3: acc = fl(acc + r), from +0 on the first block
  // ---------------------------------------------------------------------------------------
  f32_t addend, sum;
  logic acc_valid_d, acc_valid_q, acc_last_d, acc_last_q;
  f32_t acc_d, acc_q;

  assign addend = s2_first_q ? F32PosZero : acc_q;

  nibble_f32_add u_acc_add (
    .a_i  (addend),
    .b_i  (s2_product_q),
    .f32_o(sum)
  );

  always_comb begin
    acc_valid_d = s2_valid_q;
    acc_last_d  = s2_valid_q && s2_last_q;
    acc_d       = s2_valid_q ? sum : acc_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_valid_q <= 1'b0;
      acc_last_q  <= 1'b0;
      acc_q       <= F32PosZero;
    end else begin
      acc_valid_q <= acc_valid_d;
      acc_last_q  <= acc_last_d;
      acc_q       <= acc_d;
    end
  end

  assign acc_valid_o = acc_valid_q;
  assign acc_last_o  = acc_last_q;
  assign acc_o       = acc_q;

  // ---------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------
  `NIBBLE_ASSERT_INIT(LanesLegal_A, Lanes == 16 || Lanes == 32)
  `NIBBLE_ASSERT_INIT(FormatMaskNonEmpty_A, FormatMask != '0)
  // A raw_select design zeroes a block by its format registers, which own-unit designs have.
  `NIBBLE_ASSERT_INIT(RawSelectOwnUnit_A, !RawSelect || OwnUnit)
  // The exact block sum fits its register (the package's width rule).
`ifdef NIBBLE_ASSERTIONS
  // The largest |P| (every lane at the largest magnitude product) fits the signed tree output.
  localparam longint unsigned MaxPsum = longint'(Lanes) *
                                        longint'(elem_max_units(LaneDesign, FormatMask)) *
                                        longint'(elem_max_units(LaneDesign, FormatMask));
`endif
  `NIBBLE_ASSERT_INIT(PsumWidthExact_A, MaxPsum < (64'(1) << (PsumWidth - 1)))
  `NIBBLE_ASSERT_KNOWN(AccValidKnown_A, acc_valid_o)
  `NIBBLE_ASSERT_KNOWN(AccLastKnown_A, acc_last_o)
  `NIBBLE_ASSERT_KNOWN(AccKnown_A, acc_o)
  `NIBBLE_ASSERT(AccLastImpliesValid_A, !acc_last_o || acc_valid_o)

endmodule
