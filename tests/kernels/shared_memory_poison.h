// Shared memory keeps its contents from one kernel to the next. A kernel under
// test that reads shared memory it did not write in its own run would then see
// what the kernel before it left there, and in a test that runs the same
// operation twice (every GEMM kernel and tile shape on the same operands)
// that is often just what it should have written: the missing write passes.
// poison_shared_memory() fills every SM's shared memory with 0xFF bytes (NaN
// as a float, FP16 or BF16; the largest code of every 4-bit format and scale),
// so that such a read shows as a mismatch against golden.
#pragma once

#include <cstddef>

namespace nibble::test {

// Runs CTAs that each take the largest shared memory a CTA may have (one at a
// time on an SM), two per SM, each filling all of it; waits for them. Returns
// the bytes of shared memory each CTA filled.
size_t poison_shared_memory();

// Poisons, then reads the shared memory of one CTA per SM (each as large as a
// CTA may have) from a kernel that writes none of it: the number of 32-bit
// words that are not 0xFFFFFFFF, 0 where the poison reaches the next kernel.
size_t unpoisoned_shared_words();

}  // namespace nibble::test
