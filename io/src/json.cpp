// Bounded JSON parsing and bounded whole-file reads (json.h).
#include "nibble/io/json.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nibble/limits.h"

namespace nibble::io {
namespace {

void check_size(std::size_t bytes) {
  if (bytes > limits::kMaxJsonBytes) {
    throw JsonError(fmt::format("{} bytes of JSON, more than the limit of {}", bytes, limits::kMaxJsonBytes));
  }
}

// nlohmann's callback reports the depth of the value being opened (0 at the
// top), before it is built: refusing there bounds every later recursion.
template <class Json>
bool within_depth(int depth, typename Json::parse_event_t event) {
  if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
      depth >= limits::kMaxJsonDepth) {
    throw JsonError(fmt::format("JSON nested more than {} levels deep", limits::kMaxJsonDepth));
  }
  return true;
}

template <class Json>
Json parse_bounded(std::string_view text, const typename Json::parser_callback_t& also) {
  check_size(text.size());
  const typename Json::parser_callback_t callback = [&also](int depth, typename Json::parse_event_t event,
                                                            Json& parsed) {
    within_depth<Json>(depth, event);
    return also ? also(depth, event, parsed) : true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::exception& e) {
    throw JsonError(e.what());
  }
}

}  // namespace

nlohmann::json::parser_callback_t refuse_repeated_keys(std::function<void(const std::string&)> on_repeat) {
  auto open = std::make_shared<std::vector<std::set<std::string>>>();  // the keys of each object being read
  return [open, on_repeat = std::move(on_repeat)](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::object_start) open->emplace_back();
    if (event == nlohmann::json::parse_event_t::object_end && !open->empty()) open->pop_back();
    if (event == nlohmann::json::parse_event_t::key && !open->empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open->back().insert(key).second) on_repeat(key);
    }
    return true;
  };
}

nlohmann::json parse_json(std::string_view text, const nlohmann::json::parser_callback_t& also) {
  return parse_bounded<nlohmann::json>(text, also);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text) {
  return parse_bounded<nlohmann::ordered_json>(text, nullptr);
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JsonError(fmt::format("{}: cannot open for reading", path));
  std::string text;
  std::array<char, 65536> chunk{};
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (text.size() + got > max_bytes) {
      throw JsonError(fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
    }
    text.append(chunk.data(), got);
  }
  if (in.bad()) throw JsonError(fmt::format("{}: read failed", path));
  return text;
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path, limits::kMaxJsonBytes);
  try {
    return parse_json(text);
  } catch (const JsonError& e) {
    throw JsonError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

}  // namespace nibble::io
