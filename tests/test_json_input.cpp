// The checked JSON parser for user input: depth, NUL bytes, trailing bytes, one-line errors.
#include <string>

#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "test_support.hpp"

using namespace inferlab;
using Catch::Matchers::Contains;

TEST_CASE("parse_json_input parses one value and keeps key order", "[unit][json-input]") {
  const auto j = parse_json_input(" {\"b\": [1, {\"x\": \"[{\\\"\"}], \"a\": null}\n", "t.json");
  REQUIRE(j.is_object());
  CHECK(j.begin().key() == "b");
  CHECK(j["b"][1]["x"] == "[{\"");  // brackets inside strings do not count as nesting
}

TEST_CASE("parse_json_input refuses deep nesting before nlohmann parses it",
          "[unit][json-input][bad-input]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(parse_json_input(deep, "schema file 's.json'"),
                    Contains("schema file 's.json': arrays and objects nested deeper than the "
                             "limit of 512 levels (at byte 512)"));
  const std::string ok = std::string(512, '[') + std::string(512, ']');
  CHECK(parse_json_input(ok, "x").is_array());
  CHECK_THROWS_WITH(parse_json_input("[[[1]]]", "x", 2), Contains("limit of 2 levels"));
  std::size_t at = 0;
  CHECK(json_nesting_depth("[{\"a\": [\"]]]\"]}]", 10, at) == 3);
}

TEST_CASE("parse_json_input refuses NUL and trailing bytes, and names the input",
          "[unit][json-input][bad-input]") {
  using namespace std::string_literals;
  CHECK_THROWS_WITH(parse_json_input("{}\0"s, "s.json"), Contains("s.json: a NUL byte at byte 2"));
  CHECK_THROWS_WITH(parse_json_input("{\"a\": \"x\0y\"}"s, "s.json"), Contains("NUL byte"));
  CHECK_THROWS_WITH(parse_json_input("{} x", "s.json"), Contains("s.json: not valid JSON"));
  CHECK_THROWS_WITH(parse_json_input("{} x", "s.json"), Contains("expected end of input"));
  // A number beyond a double's range is nlohmann's out_of_range, not a parse_error (fuzzing).
  CHECK_THROWS_AS(parse_json_input("[4888e44444444]", "s.json"), Error);
  CHECK_THROWS_WITH(parse_json_input("[4888e44444444]", "s.json"),
                    Contains("s.json: not valid JSON: number overflow"));
  try {
    parse_json_input("{\"a\":\n tru}", "s.json");
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.find("[json.exception") == std::string::npos);
    CHECK_THAT(what, Contains("s.json: not valid JSON: parse error at line 2"));
  }
}
