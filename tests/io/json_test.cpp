// The bounded JSON parser and file reader every JSON input goes through.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "nibble/io/json.h"
#include "nibble/limits.h"

namespace nibble::io {
namespace {

std::string arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

// `depth` levels of objects: {"k": {"k": ... {} ...}}.
std::string objects(int depth) {
  std::string s;
  for (int i = 1; i < depth; ++i) s += "{\"k\": ";
  s += "{}";
  s += std::string(static_cast<size_t>(depth - 1), '}');
  return s;
}

void expect_json_error(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no JsonError; expected " << message;
  } catch (const JsonError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Json, NestingUpToTheLimitParses) {
  const nlohmann::json a = parse_json(arrays(limits::kMaxJsonDepth));
  const nlohmann::json* inner = &a;
  int depth = 1;
  while (!inner->empty()) {
    inner = &(*inner)[0];
    ++depth;
  }
  EXPECT_EQ(depth, limits::kMaxJsonDepth);
  const nlohmann::ordered_json o = parse_ordered_json(objects(limits::kMaxJsonDepth));
  EXPECT_TRUE(o.is_object());
  EXPECT_TRUE(o.contains("k"));
}

TEST(Json, NestingBeyondTheLimitIsRefused) {
  for (const int depth : {limits::kMaxJsonDepth + 1, 1000, 100000}) {
    SCOPED_TRACE(depth);
    expect_json_error([&] { parse_json(arrays(depth)); }, "nested more than 64 levels deep");
    expect_json_error([&] { parse_ordered_json(objects(depth)); }, "nested more than 64 levels deep");
  }
}

TEST(Json, SyntaxErrorsAreJsonErrors) {
  expect_json_error([] { parse_json("{\"a\": "); }, "parse error");
  expect_json_error([] { parse_json("{\"a\": 1e400}"); }, "number overflow");
}

TEST(Json, TheCallerSeesEveryEventAndMayRefuse) {
  int keys = 0;
  const nlohmann::json j = parse_json(R"({"a": 1, "b": [2, 3]})", [&](int, nlohmann::json::parse_event_t e, nlohmann::json&) {
    keys += e == nlohmann::json::parse_event_t::key ? 1 : 0;
    return true;
  });
  EXPECT_EQ(keys, 2);
  EXPECT_EQ(j["b"][1], 3);
  EXPECT_THROW(parse_json(R"({"a": 1})", [](int, nlohmann::json::parse_event_t, nlohmann::json&) -> bool {
                 throw std::invalid_argument("refused");
               }),
               std::invalid_argument);
}

TEST(Json, ARepeatedKeyIsRefusedAtAnyDepthAndOnlyWithinOneObject) {
  std::string repeated;
  const auto refuse = refuse_repeated_keys([&repeated](const std::string& key) {
    repeated = key;
    throw std::invalid_argument("repeated " + key);
  });
  // The same key in sibling and nested objects is no repeat.
  const nlohmann::json j = parse_json(R"({"a": {"a": 1, "b": {"a": 2}}, "b": [{"a": 3}, {"a": 4}]})", refuse);
  EXPECT_EQ(j["b"][1]["a"], 4);
  EXPECT_TRUE(repeated.empty());
  for (const char* text : {R"({"a": 1, "a": 2})", R"({"x": {"b": {"a": 1, "a": 2}}})", R"([{"a": 1}, {"k": 1, "k": 2}])"}) {
    SCOPED_TRACE(text);
    repeated.clear();
    EXPECT_THROW(parse_json(text, refuse_repeated_keys([&repeated](const std::string& key) {
                              repeated = key;
                              throw std::invalid_argument("repeated " + key);
                            })),
                 std::invalid_argument);
    EXPECT_FALSE(repeated.empty());
  }
}

TEST(Json, ATextOverTheSizeLimitIsRefusedUnread) {
  const std::string big(limits::kMaxJsonBytes + 1, ' ');
  expect_json_error([&] { parse_json(big); }, "more than the limit");
}

TEST(Json, FileReadsStopAtTheirLimit) {
  expect_json_error([] { read_text_file("/dev/zero", 1 << 20); }, "/dev/zero: larger than the limit of 1048576 bytes");
  expect_json_error([] { read_json_file("/dev/zero"); }, "/dev/zero: larger than the limit");
  expect_json_error([] { read_text_file("/nonexistent/x.json", 100); }, "/nonexistent/x.json: cannot open");
  EXPECT_EQ(read_text_file("/dev/null", 0), "");
}

}  // namespace
}  // namespace nibble::io
