// The three renderings of `nibble quant` results: a fixed-width text table for
// people, JSON for programs, CSV for spreadsheets. Each takes measured results
// and formats them; none computes anything.
//
// Non-finite numbers: the text and CSV forms print inf, -inf and nan; JSON has
// no such numbers, so they become null there (SQNR is +inf for a lossless
// quantization, delta_sqnr_rht is NaN for rows without an RHT).
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"

namespace nibble::analysis {

// "off" or the RHT size: the spelling the command line uses.
std::string rht_name(const RhtConfig& rht);

// One line per matrix row, under a header.
std::string matrix_table(const std::vector<MatrixRow>& rows);

// The predicted per-level bias of format f beside the measured bias of each
// of `measured` (rows of format f), one column per row, labelled by its RHT.
std::string level_bias_table(Format f, const std::vector<const MatrixRow*>& measured);

// eta and cosine per depth, one column per run, and the per-layer gain
// eta_L^(1/L) under the eta columns.
std::string chain_table(const ChainShape& shape, const std::vector<ChainRun>& runs);

nlohmann::json matrix_row_json(const MatrixRow& row);
nlohmann::json grid_level_bias_json(Format f);
nlohmann::json chain_json(const ChainShape& shape, const std::vector<ChainRun>& runs);

// A header line, then one line per matrix row (the per-level biases are in
// the JSON only).
void write_matrix_csv(std::ostream& out, const std::vector<MatrixRow>& rows);

}  // namespace nibble::analysis
