// JSON Schema, phase 1, strings and numbers: the `format`s enforced as regular languages,
// length bounds, patterns, and numeric bounds and multipleOf as typed ranges.

#include <cmath>
#include <optional>
#include <string>

#include "inferlab/constrain/number_range.hpp"
#include "inferlab/constrain/regex.hpp"
#include "json_schema_parser.hpp"
#include "regex_tree.hpp"

namespace inferlab::schema_parser {

namespace {

// IPv6 (RFC 4291 section 2.2): eight groups of 1-4 hex digits, or fewer around one "::", the
// last two groups possibly an IPv4 address; one alternative per number of groups before "::".
std::string ipv6_regex(const std::string& ipv4) {
  const std::string h = "[0-9a-fA-F]{1,4}";
  std::vector<std::string> alts{fmt::format("({0}:){{7}}{0}", h),
                                fmt::format("({0}:){{6}}{1}", h, ipv4)};
  for (int left = 0; left <= 7; ++left) {
    const int right =
        7 - left;  // groups the "::" leaves room for on its right (it stands for >= 1)
    std::string before = left == 0 ? "" : fmt::format("{0}(:{0}){{{1}}}", h, left - 1);
    std::vector<std::string> after{fmt::format("({0}(:{0}){{0,{1}}})?", h, right - 1)};
    if (right >= 2) after.push_back(fmt::format("({0}:){{0,{1}}}{2}", h, right - 2, ipv4));
    if (right == 0) after = {""};
    std::string tail = after.size() == 1 ? after[0] : "(" + after[0] + "|" + after[1] + ")";
    alts.push_back(before + "::" + tail);
  }
  std::string out = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? "|" : "") + alts[i];
  return out + ")";
}

// The regular language of a `format` the engine enforces (when format is an assertion), or
// std::nullopt for a format it does not know: an annotation, as the specification says.
// Where a format's exact language is not regular or too large (leap seconds at any offset, a
// hostname's total length), the regex is a subset: it may refuse a valid string, never accept
// an invalid one.
std::optional<std::string> format_regex(const Json& f) {
  if (!f.is_string()) throw Error("format must be a string");
  const std::string name = f.get<std::string>();
  // Dates: the days each month has; February 29 only in leap years (divisible by 4, and
  // centuries only when divisible by 400).
  static const std::string year = "[0-9]{4}";
  static const std::string leap_year =
      "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)";
  static const std::string date =
      "(" + year +
      "-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
      "02-(0[1-9]|1[0-9]|2[0-8]))|" +
      leap_year + "-02-29)";
  // RFC 3339 full-time: a leap second (:60) only at 23:59 UTC, written with Z or a zero offset.
  static const std::string offset = "([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string frac = "(\\.[0-9]+)?";
  static const std::string time = "(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + frac + offset +
                                  "|23:59:60" + frac + "([Zz]|[+-]00:00))";
  static const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  static const std::string ipv4 = octet + "(\\." + octet + "){3}";
  static const std::string atext = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+";
  // A hostname label: 1-63 letters, digits and hyphens, no hyphen first or last. At most
  // four labels, the last of at most 61: never above the 253 characters a name may have.
  static const std::string label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";
  static const std::string last_label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,59}[a-zA-Z0-9])?";
  static const std::string hostname =
      "(" + label + "|" + label + "(\\." + label + "){0,2}\\." + last_label + ")";
  // URI characters (RFC 3986): unreserved, reserved but '#', '[' and ']', and %-escapes; no
  // space, quote, backslash, braces, or anything outside ASCII. One '#' starts the fragment.
  // (An IP-literal host "[...]" is refused: a subset.)
  static const std::string uri_char = "([a-zA-Z0-9._~:/?@!$&'()*+,;=-]|%[0-9a-fA-F]{2})";
  static const std::string fragment = "(#" + uri_char + "*)?";
  static const std::string scheme = "[a-zA-Z][a-zA-Z0-9+.-]*:";
  // A relative reference's first segment holds no ':' (it would read as a scheme).
  static const std::string relative =
      "(([a-zA-Z0-9._~@!$&'()*+,;=-]|%[0-9a-fA-F]{2})*([/?]" + uri_char + "*)?" + fragment + ")";
  static const std::string n = "[0-9]+";
  static const std::string dur_time =
      "T(" + n + "H(" + n + "M(" + n + "S)?)?|" + n + "M(" + n + "S)?|" + n + "S)";
  if (name == "date") return date;
  if (name == "time") return time;
  if (name == "date-time") return date + "[Tt]" + time;
  if (name == "duration") {
    return "P((" + n + "Y(" + n + "M(" + n + "D)?)?|" + n + "M(" + n + "D)?|" + n + "D)(" +
           dur_time + ")?|" + dur_time + "|" + n + "W)";
  }
  if (name == "email") return atext + "(\\." + atext + ")*@" + hostname;
  if (name == "hostname") return hostname;
  if (name == "uuid")
    return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  if (name == "ipv4") return ipv4;
  if (name == "ipv6") return ipv6_regex(ipv4);
  if (name == "uri") return scheme + uri_char + "*" + fragment;
  if (name == "uri-reference")
    return "(" + scheme + uri_char + "*" + fragment + "|" + relative + ")";
  return std::nullopt;
}

// A bound of a non-integer number as decimal digits, or a compile error naming its keyword.
DecimalDigits bound_digits(double v, const char* kw) {
  const auto d = decimal_digits(v);
  if (!d) unsupported(kw, "bounds of a non-integer number must lie within 1e-12 <= |bound| < 1e15");
  return *d;
}

}  // namespace

SpecId SchemaParser::parse_string(const Json& s) {
  const auto min_len = count_kw(s, "minLength");
  const auto max_len = count_kw(s, "maxLength");
  const long lo = min_len.value_or(0);
  const long hi = max_len ? *max_len : -1;
  if (!count_range_nonempty(lo, hi, "minLength", "maxLength")) return add(NothingSpec{});
  StringSpec spec;
  spec.min_length = static_cast<int>(lo);
  spec.max_length = static_cast<int>(hi);
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) throw Error("pattern must be a string");
    spec.regexes.push_back({s["pattern"].get<std::string>(), true});
  }
  if (s.contains("format") && limits_.format_assertion) {
    if (auto format = format_regex(s["format"])) spec.regexes.push_back({*format, false});
  }
  // The regex's errors are the schema's: found here, not while emitting. A lone regex is
  // compiled as the emitter will compile it; one cut by lengths or other regexes is only
  // parsed, since the intersection builds its automaton from the tree (where a count above
  // maxLength is cut first, so X{1,900000} with maxLength 4 is fine there).
  const bool alone = spec.regexes.size() == 1 && lo <= 0 && hi < 0;
  for (const RegexTerm& r : spec.regexes) {
    if (alone) {
      Grammar check;
      compile_regex(check, r.pattern, RegexEncoding::json_string, r.search);
    } else {
      (void)regex_tree::parse_regex(r.pattern, r.search);
    }
  }
  return add(std::move(spec));
}

SpecId SchemaParser::parse_number(const Json& s, bool integer) {
  std::optional<double> lo, hi;
  bool lo_excl = false, hi_excl = false;
  auto num = [&](const char* k) -> std::optional<double> {
    if (!s.contains(k)) return std::nullopt;
    if (s[k].is_boolean()) unsupported(k, "the draft-04 boolean form");
    if (!s[k].is_number()) throw Error(fmt::format("{} must be a number", k));
    return s[k].get<double>();
  };
  if (auto v = num("minimum")) lo = v;
  if (auto v = num("exclusiveMinimum"); v && (!lo || *v >= *lo)) {
    lo = v;
    lo_excl = true;
  }
  if (auto v = num("maximum")) hi = v;
  if (auto v = num("exclusiveMaximum"); v && (!hi || *v <= *hi)) {
    hi = v;
    hi_excl = true;
  }
  std::optional<double> mult = num("multipleOf");
  if (mult && *mult <= 0) throw Error("multipleOf must be > 0");
  const bool bounded = lo || hi;
  if (!integer && mult)
    unsupported("multipleOf", "on a number that is not an integer (supported for type integer)");
  if (!integer && bounded) return parse_decimal_range(lo, lo_excl, hi, hi_excl);
  if (!bounded && !mult) return integer ? add(IntegerSpec{}) : add(NumberSpec{});
  IntegerSpec spec;
  if (mult) {
    if (bounded) unsupported("multipleOf", "together with minimum/maximum");
    if (std::floor(*mult) != *mult || *mult > 10000)
      unsupported("multipleOf", "only integer divisors up to 10000");
    spec.multiple_of = static_cast<int>(*mult);
    return add(spec);
  }
  // Integer bounds: [ceil(lo), floor(hi)], exclusive bounds moved in by one, in decimal
  // digits of any length (a bound such as 1e30 is an integer beyond 64 bits).
  spec.bounded = true;
  if (lo) {
    if (!std::isfinite(*lo)) throw Error("minimum must be a finite number");
    const double c = std::ceil(*lo);
    spec.range.min = DecimalInteger::from_double(c);
    if (lo_excl && c == *lo) spec.range.min = spec.range.min->plus(1);
  }
  if (hi) {
    if (!std::isfinite(*hi)) throw Error("maximum must be a finite number");
    const double f = std::floor(*hi);
    spec.range.max = DecimalInteger::from_double(f);
    if (hi_excl && f == *hi) spec.range.max = spec.range.max->plus(-1);
  }
  if (spec.range.min && spec.range.max && *spec.range.max < *spec.range.min)
    return add(NothingSpec{});
  return add(spec);
}

SpecId SchemaParser::parse_decimal_range(std::optional<double> lo, bool lo_excl,
                                         std::optional<double> hi, bool hi_excl) {
  if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_excl || hi_excl)))) return add(NothingSpec{});
  NumberSpec spec;
  spec.bounded = true;
  if (!hi || *hi > 0 || (*hi == 0 && !hi_excl)) {
    MagnitudeRange m;
    if (lo && *lo >= 0) {
      m.min = bound_digits(*lo, lo_excl ? "exclusiveMinimum" : "minimum");
      m.min_exclusive = lo_excl;
    }
    if (hi) m.max = bound_digits(*hi, hi_excl ? "exclusiveMaximum" : "maximum");
    m.max_exclusive = hi_excl;
    spec.range.nonnegative = m;
  }
  if (!lo || *lo < 0) {
    MagnitudeRange m;
    m.min_exclusive = true;  // m > 0 (zero is in the non-negative part)
    if (hi && *hi < 0) {
      m.min = bound_digits(-*hi, hi_excl ? "exclusiveMaximum" : "maximum");
      m.min_exclusive = hi_excl;
    } else {
      m.min = DecimalDigits{};
    }
    if (lo) m.max = bound_digits(-*lo, lo_excl ? "exclusiveMinimum" : "minimum");
    m.max_exclusive = lo_excl;
    spec.range.negative = m;
  }
  return add(std::move(spec));
}

}  // namespace inferlab::schema_parser
