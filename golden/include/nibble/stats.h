// Quantization-error metrics: what a quantizer does to a tensor, measured
// against the reference it was given. Every function is pure, takes spans of
// equal length n, and accumulates in double.
//
// Non-finite values are never skipped: a NaN or Inf in either span makes the
// sums, and so the metrics, NaN or infinite. Callers that want to measure only
// the finite part of a tensor must remove the rest before quantizing.
//
// Shrinkage bias. E2M1's grid {0, .5, 1, 1.5, 2, 3, 4, 6} doubles its spacing
// at 2 and 4, so the bucket of values that round to those levels reaches
// further above the level than below it; with a locally flat density the
// rounded value is then smaller than the input on average. The uniform grids
// (E1M2, INT4) have no such levels. grid_level_bias() gives the flat-density
// prediction per level, measured_level_bias() the same quantity from data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nibble/formats.h"

namespace nibble {

// Energy-based metrics of q (quantized, then dequantized) against x.
//   sqnr_db        10 log10(sum x^2 / sum (x - q)^2); +inf when the error is
//                  zero, -inf when the reference is all zero and the error not.
//   nmse           sum (x - q)^2 / sum x^2; 0 when the error is zero.
//   alpha          <q, x> / ||x||^2: the least-squares gain of q on x; below 1
//                  when quantization shrinks the tensor. NaN for x = 0.
//   rel_mag_error  E[|q| - |x|] / E|x|: the mean magnitude change relative to
//                  the mean magnitude; negative when magnitudes shrink. NaN for x = 0.
struct ErrorMetrics {
  double sqnr_db;
  double nmse;
  double alpha;
  double rel_mag_error;
};

ErrorMetrics error_metrics(const float* x, const float* q, size_t n);
double sqnr_db(const float* x, const float* q, size_t n);
double nmse(const float* x, const float* q, size_t n);
double attenuation(const float* x, const float* q, size_t n);
double relative_magnitude_error(const float* x, const float* q, size_t n);

// The positive magnitudes a quantizer of format f emits, ascending, as values
// (E2M1: .5 1 1.5 2 3 4 6; E1M2: .25 ... 1.75; INT4: 1 ... 7). Derived from the
// format table by decoding every code; INT4's -8 is decodable but never emitted.
std::vector<double> positive_levels(Format f);

// L, the number of distinct values a quantizer of format f emits: every
// positive level, its negation, and 0 (one level, whether the signed-zero
// policy codes it +0 or -0). 15 for all three formats.
int emitted_level_count(Format f);

// Shannon entropy, in bits, of the empirical distribution of the 4-bit codes
// (low nibble of each byte). 0 for n = 0.
double code_entropy_bits(const uint8_t* codes, size_t n);

// B_eff = 2^H / L: the perplexity of the code distribution as a fraction of
// the L levels the quantizer can emit. 1 when all L levels are used equally
// often; 1/L when a single level is. It says how much of the grid a tensor
// actually exercises, independent of how many levels a format has.
double effective_level_fraction(double entropy_bits, int levels);

// The predicted rounding bias at one positive level g under RNE, for a density
// that is flat across g's bucket. With p and n the levels below and above g
// (p = 0 for the smallest level), the bucket of values that round to g is
// [(p + g)/2, (g + n)/2]; with ell = (g - p)/2 and r = (n - g)/2 the mean of
// (g - v) over the bucket is bias = (ell - r)/2, in the format's value units
// (the scaled domain, where the grid is). Ties at the bucket ends have measure
// zero and do not enter.
//
// Top level: a scale that maps the block amax onto gmax (fp32 exactly, nvfp4 up
// to the E4M3 rounding of the scale) leaves no scaled value above gmax, so the
// top bucket is [(p + gmax)/2, gmax]: r = 0 and bias = +ell/2, an upward bias.
// Scales that let values exceed gmax (mx-floor) saturate them into this bucket
// instead; measured_level_bias() shows that, this rule does not model it.
//
// E2M1: 0 at .5, 1, 1.5 and 3; -0.125 at 2; -0.25 at 4; +0.5 at 6.
// E1M2 and INT4: 0 at every interior level; +1/16 and +1/4 at their tops.
struct GridLevelBias {
  double level;  // g
  double below;  // p
  double above;  // n; equal to g at the top level
  double ell;    // (g - p)/2
  double r;      // (n - g)/2
  double bias;   // (ell - r)/2
};
std::vector<GridLevelBias> grid_level_bias(Format f);

// The measured counterpart: for each positive level g, the mean of
// |q_scaled| - |x_scaled| over the elements whose code has magnitude g, where
// q_scaled is the code's value and x_scaled the reference in the scaled domain
// (the reference divided by its block's decode scale; analysis::scaled_reference
// computes it). bias is NaN for a level no element uses. Elements coded 0 do
// not enter: their error belongs to the zero bucket, not to a positive level.
struct MeasuredLevelBias {
  double level;
  uint64_t count;
  double bias;
};
std::vector<MeasuredLevelBias> measured_level_bias(Format f, const uint8_t* codes, const double* x_scaled, size_t n);

}  // namespace nibble
