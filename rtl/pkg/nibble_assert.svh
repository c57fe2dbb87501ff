// Assertion macros for Nibble's RTL (after lowRISC's prim_assert.sv, much reduced).
//
// Assertions are compiled only when NIBBLE_ASSERTIONS is defined: the Verilated tests and
// the lint run define it (with --assert), synthesis does not. Concurrent assertions sample
// on clk_i and are disabled in reset (rst_ni low); every module that uses them has those
// two ports. Verilator 5.006 supports the forms used here: immediate assertions in an
// initial block, and concurrent assertions with one clock, disable iff, $past and $stable
// (no sequences, no implication across cycles: write `!$past(a) || b`).
`ifndef NIBBLE_ASSERT_SVH
`define NIBBLE_ASSERT_SVH

`ifdef NIBBLE_ASSERTIONS

// A property that holds in every clock cycle out of reset.
`define NIBBLE_ASSERT(__name, __prop)                                     \
  __name: assert property (@(posedge clk_i) disable iff (!rst_ni) (__prop)) \
    else $error("%m: %s failed", `"__name`");

// A property of the environment (an input protocol rule): checked like an assertion.
`define NIBBLE_ASSUME(__name, __prop)                                     \
  __name: assume property (@(posedge clk_i) disable iff (!rst_ni) (__prop)) \
    else $error("%m: %s violated by the environment", `"__name`");

// A signal never holds X or Z out of reset (meaningful in 4-state simulators; Verilator is
// 2-state and its $isunknown is always 0, so there it only checks that the macro compiles).
`define NIBBLE_ASSERT_KNOWN(__name, __sig) `NIBBLE_ASSERT(__name, !$isunknown(__sig))

// A fact about parameters, checked once at time zero.
`define NIBBLE_ASSERT_INIT(__name, __prop)                   \
  initial begin : __name                                      \
    assert (__prop) else $fatal(1, "%m: %s failed", `"__name`"); \
  end

`else

`define NIBBLE_ASSERT(__name, __prop)
`define NIBBLE_ASSUME(__name, __prop)
`define NIBBLE_ASSERT_KNOWN(__name, __sig)
`define NIBBLE_ASSERT_INIT(__name, __prop)

`endif

`endif  // NIBBLE_ASSERT_SVH
