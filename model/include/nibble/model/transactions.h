// The messages on the model's channels: the same fields as the RTL handshakes
// (rtl/README.md, nibble_dpu and nibble_tile ports). Codes are one per byte.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "nibble/formats.h"

namespace sc_core {
class sc_trace_file;
}

namespace nibble::model {

// nibble_dpu input: one k-block (valid_i, first_i, last_i, formats, codes, scales).
struct DpuBlock {
  bool first = false;
  bool last = false;
  Format format_a = Format::kE2M1, format_b = Format::kE2M1;
  ScaleFormat scale_format_a = ScaleFormat::kFP32, scale_format_b = ScaleFormat::kFP32;
  std::vector<uint8_t> codes_a, codes_b;  // Lanes each (partial blocks zero-padded)
  uint32_t scale_a = 0, scale_b = 0;
  bool operator==(const DpuBlock& o) const;
};

// nibble_dpu output: acc_valid_o / acc_last_o / acc_o.
struct DpuAcc {
  bool last = false;
  float acc = 0.0f;
  bool operator==(const DpuAcc& o) const;
};

// nibble_tile input beat: one k-block of an A row panel and a B column panel.
struct TileBeat {
  bool first = false;
  bool last = false;
  Format format_a = Format::kE2M1, format_b = Format::kE2M1;
  ScaleFormat scale_format_a = ScaleFormat::kFP32, scale_format_b = ScaleFormat::kFP32;
  std::vector<uint8_t> codes_a;    // [Rows][Lanes]
  std::vector<uint32_t> scales_a;  // [Rows]
  std::vector<uint8_t> codes_b;    // [Cols][Lanes]
  std::vector<uint32_t> scales_b;  // [Cols]
  uint32_t count = 0;              // valid k elements in this block (<= Lanes); the rest are padding
  bool operator==(const TileBeat& o) const;
};

// nibble_tile output beat: out_row_o, out_last_o, out_c_o[Cols].
struct TileRow {
  int row = 0;
  bool last = false;
  std::vector<float> c;
  bool operator==(const TileRow& o) const;
};

// sc_fifo prints its contents; these are the printers it needs.
std::ostream& operator<<(std::ostream& os, const DpuBlock& b);
std::ostream& operator<<(std::ostream& os, const DpuAcc& a);
std::ostream& operator<<(std::ostream& os, const TileBeat& b);
std::ostream& operator<<(std::ostream& os, const TileRow& r);

// sc_signal ports of these types need tracers: the handshake-relevant fields.
void sc_trace(sc_core::sc_trace_file* tf, const TileBeat& b, const std::string& name);
void sc_trace(sc_core::sc_trace_file* tf, const TileRow& r, const std::string& name);

}  // namespace nibble::model
