#include "util/json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "util/text.h"

namespace llmwatch {
namespace {

TEST(JsonWriter, WritesNestedDocumentsThatReadBack) {
  JsonWriter w;
  w.begin_object();
  w.key("a").value(std::int64_t{-3});
  w.key("b").begin_array().value(0.1).value(1e300).value(std::uint64_t{18446744073709551615u});
  w.begin_object().end_object().begin_array().end_array().end_array();
  w.key("c").value(true).key("d").null().key("e").value(2.5);
  w.end_object();
  auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["a"], -3);
  EXPECT_EQ(j["b"][0].get<double>(), 0.1);  // shortest form, read back exactly
  EXPECT_EQ(j["b"][1].get<double>(), 1e300);
  EXPECT_EQ(j["b"][2].get<std::uint64_t>(), 18446744073709551615u);
  EXPECT_TRUE(j["b"][3].is_object());
  EXPECT_TRUE(j["b"][4].is_array());
  EXPECT_EQ(j["c"], true);
  EXPECT_TRUE(j["d"].is_null());
  EXPECT_EQ(j["e"], 2.5);
}

// A part made once and kept is copied in as a value: separated like any other, in an array
// and after a key.
TEST(JsonWriter, ARawValueTakesItsPlaceLikeAnyOther) {
  JsonWriter w;
  w.begin_object().key("kept").raw("[{\"a\":1}]").key("n").value(2);
  w.key("list").begin_array().value(1).raw("{}").raw("\"x\"").end_array().end_object();
  auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["kept"][0]["a"], 1);
  EXPECT_EQ(j["n"], 2);
  EXPECT_EQ(j["list"], nlohmann::json::parse("[1, {}, \"x\"]"));
}

// Log lines and paths carry anything: quotes, backslashes, control characters, a cut
// multi-byte character. The document must still parse, with the text intact or repaired.
TEST(JsonWriter, AnyBytesMakeAValidString) {
  std::string hostile = "say \"hi\"\\ \x01\x1f\t\r\n\x7f caf\xC3\xA9 cut \xE2\x96";
  JsonWriter w;
  w.begin_array().value(hostile).value(std::numeric_limits<double>::quiet_NaN());
  w.value(std::numeric_limits<double>::infinity()).end_array();
  auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j[0].get<std::string>(), valid_utf8(hostile));  // the cut character replaced
  EXPECT_EQ(j[0].get<std::string>().substr(0, 25), hostile.substr(0, 25));
  EXPECT_TRUE(j[1].is_null());
  EXPECT_TRUE(j[2].is_null());
}

}  // namespace
}  // namespace llmwatch
