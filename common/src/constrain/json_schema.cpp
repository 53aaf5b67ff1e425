// JSON Schema -> byte grammar in two phases (json_schema_spec.hpp): parse into typed specs,
// then emit them; and Python's json.dumps, the text form the grammars and MaskBench agree on.
#include "inferlab/constrain/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "inferlab/constrain/json_schema_spec.hpp"

namespace inferlab {

using Json = nlohmann::ordered_json;

namespace {

std::string python_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // Shortest repr that round-trips, as Python's float.__repr__.
  std::string s;
  for (int prec = 1; prec <= 17; ++prec) {
    s = fmt::format("{:.{}g}", v, prec);
    if (std::strtod(s.c_str(), nullptr) == v) break;
  }
  const auto e = s.find('e');
  std::string mant = e == std::string::npos ? s : s.substr(0, e);
  std::string exp = e == std::string::npos ? "" : s.substr(e + 1);
  if (!exp.empty()) {
    int x = std::stoi(exp);
    // Python uses exponent form only when exp < -4 or exp >= 16.
    if (x >= -4 && x < 16)
      return fmt::format("{:.{}f}", v, std::max(0, -x + static_cast<int>(mant.size()) - 2 + 1));
    return fmt::format("{}e{}{:02d}", mant, x < 0 ? '-' : '+', std::abs(x));
  }
  if (mant.find('.') == std::string::npos) mant += ".0";
  return mant;
}

}  // namespace

std::string python_json_dumps(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) out += ", ";
        first = false;
        out += Json(k).dump(-1, ' ', false) + ": " + python_json_dumps(x);
      }
      return out + "}";
    }
    case Json::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += python_json_dumps(v[i]);
      }
      return out + "]";
    }
    case Json::value_t::number_float:
      return python_float(v.get<double>());
    default:
      return v.dump(-1, ' ', false);
  }
}

Grammar json_schema_grammar(const Json& schema, const JsonSchemaLimits& limits) {
  return emit_json_schema(parse_json_schema(schema, limits), limits);
}

Grammar json_mode_grammar(const JsonSchemaLimits& limits) {
  check_json_schema_limits(limits);
  return emit_json_value(limits);
}

}  // namespace inferlab
