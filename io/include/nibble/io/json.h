// JSON that comes from outside -- a .safetensors header, a quantized-tensor
// file's metadata, a tile configuration, a results file -- parsed within
// bounds: at most limits::kMaxJsonBytes of text nested at most
// limits::kMaxJsonDepth levels deep, so that no file can exhaust the stack or
// the memory of the code that walks it. Every JSON Nibble reads goes through
// these.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nibble::io {

// A text that is not JSON or lies outside the bounds. The message says what
// is wrong but not where; the caller adds the file.
class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `also` (optional) sees every parse event as nlohmann's parser callback does
// and may throw to refuse the text; its return value decides what is kept.
nlohmann::json parse_json(std::string_view text, const nlohmann::json::parser_callback_t& also = nullptr);
nlohmann::ordered_json parse_ordered_json(std::string_view text);

// An `also` for parse_json that calls `on_repeat(key)` for a key given twice in
// one object, at any depth (the parser would silently keep the last value);
// on_repeat must throw. One callback per parse (it keeps the open objects' keys).
nlohmann::json::parser_callback_t refuse_repeated_keys(std::function<void(const std::string&)> on_repeat);

// The whole of the file `path`, refused (JsonError: "<path>: ...") where it
// cannot be opened or read, or holds more than `max_bytes`: a read that stops
// early on /dev/zero.
std::string read_text_file(const std::string& path, std::size_t max_bytes);

// read_text_file within limits::kMaxJsonBytes, then parse_json; a JsonError
// names the file.
nlohmann::json read_json_file(const std::string& path);

}  // namespace nibble::io
