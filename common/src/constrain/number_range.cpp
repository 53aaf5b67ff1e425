// Numeric bounds as regular languages over decimal digits.
#include "inferlab/constrain/number_range.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace inferlab {

namespace {

int digit(Grammar& g, int d) { return g.literal(std::string(1, static_cast<char>('0' + d))); }

// Canonical decimal naturals with exactly as many digits as a (== b's length), in [a, b]:
// equal leading digits are written as they are; at the first difference, a's digit followed
// by anything at least a's rest, the digits strictly between followed by anything, and b's
// digit followed by anything at most b's rest.
int same_length_range(Grammar& g, const std::string& a, const std::string& b) {
  if (a.empty()) return g.empty();
  if (a[0] == b[0])
    return g.seq({g.literal(a.substr(0, 1)), same_length_range(g, a.substr(1), b.substr(1))});
  const std::size_t rest = a.size() - 1;
  const std::string nines(rest, '9'), zeros(rest, '0');
  const auto any_rest = [&] {
    return g.repeat(g.byte_range('0', '9'), static_cast<int>(rest), static_cast<int>(rest));
  };
  if (a.substr(1) == zeros && b.substr(1) == nines) {
    return g.seq({g.byte_range(static_cast<unsigned char>(a[0]), static_cast<unsigned char>(b[0])),
                  any_rest()});
  }
  std::vector<int> alts{
      g.seq({g.literal(a.substr(0, 1)), same_length_range(g, a.substr(1), nines)})};
  if (a[0] + 1 <= b[0] - 1) {
    alts.push_back(g.seq(
        {g.byte_range(static_cast<unsigned char>(a[0] + 1), static_cast<unsigned char>(b[0] - 1)),
         any_rest()}));
  }
  alts.push_back(g.seq({g.literal(b.substr(0, 1)), same_length_range(g, zeros, b.substr(1))}));
  return g.alt(std::move(alts));
}

// Compares two naturals written without leading zeros.
bool natural_less(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Naturals in [a, b] (b empty: unbounded), as decimal digits without leading zeros: one
// same_length_range per number of digits.
int natural_range(Grammar& g, const std::string& a, const std::optional<std::string>& b) {
  if (b && natural_less(*b, a)) return g.alt({});
  const std::size_t max_len = b ? b->size() : a.size();
  std::vector<int> alts;
  for (std::size_t len = a.size(); len <= max_len; ++len) {
    // The naturals of `len` digits: from 10^(len-1) (0 for one digit) to 10^len - 1.
    std::string lo(len, '0');
    if (len > 1) lo[0] = '1';
    std::string hi(len, '9');
    if (natural_less(lo, a)) lo = a;
    if (b && natural_less(*b, hi)) hi = *b;
    if (!natural_less(hi, lo)) alts.push_back(same_length_range(g, lo, hi));
  }
  if (!b) {  // every number with more digits than a is larger
    alts.push_back(g.seq({g.byte_range('1', '9'),
                          g.repeat(g.byte_range('0', '9'), static_cast<int>(a.size()), -1)}));
  }
  return g.alt(std::move(alts));
}

// A natural's digits plus one ("99" -> "100").
std::string natural_increment(const std::string& s) {
  std::string out = s;
  std::size_t i = out.size();
  while (i > 0 && out[i - 1] == '9') out[--i] = '0';
  if (i == 0) return std::string(1, '1').append(out);
  ++out[i - 1];
  return out;
}

// A positive natural's digits minus one ("100" -> "99").
std::string natural_decrement(const std::string& s) {
  std::string out = s;
  std::size_t i = out.size();
  while (out[i - 1] == '0') out[--i] = '9';
  --out[i - 1];
  const bool leading_zero = out.size() > 1 && out[0] == '0';
  return leading_zero ? out.substr(1) : out;
}

// Fraction digits s (the x in "I.x"; empty when there is no fraction) whose value 0.s lies
// above 0.lo (strictly if lo_strict) and below 0.hi (strictly if hi_strict); a missing bound
// is std::nullopt. Digit by digit: a digit above lo's (below hi's) settles that side.
int fraction_between(Grammar& g, std::optional<std::string> lo, bool lo_strict,
                     std::optional<std::string> hi, bool hi_strict, bool allow_empty) {
  const int digit_any = g.byte_range('0', '9');
  if (lo && lo->empty() && !lo_strict) lo.reset();  // >= 0: always true
  if (!lo && !hi) return g.repeat(digit_any, allow_empty ? 0 : 1, -1);
  if (lo && lo->empty() && !hi) {  // > 0: some digit after here is not 0
    return g.seq(
        {g.repeat(g.literal("0"), 0, -1), g.byte_range('1', '9'), g.repeat(digit_any, 0, -1)});
  }
  if (hi && hi->empty()) {  // the rest must be 0 (<= 0) or is impossible (< 0)
    if (hi_strict || (lo && lo_strict)) return g.alt({});
    return g.repeat(g.literal("0"), allow_empty ? 0 : 1, -1);
  }
  std::vector<int> alts;
  // Ending here means the remaining digits are zeros.
  const bool end_ok = !lo || (lo->empty() && !lo_strict);
  if (allow_empty && end_ok) alts.push_back(g.empty());
  for (int c = '0'; c <= '9'; ++c) {
    std::optional<std::string> nlo = lo, nhi = hi;
    bool dead = false;
    if (lo) {
      const char l = lo->empty() ? '0' : (*lo)[0];
      if (c > l)
        nlo.reset();
      else if (c < l)
        dead = true;
      else
        nlo = lo->empty() ? std::string() : lo->substr(1);
    }
    if (hi) {
      const char h = (*hi)[0];
      if (c < h)
        nhi.reset();
      else if (c > h)
        dead = true;
      else
        nhi = hi->substr(1);
    }
    if (dead) continue;
    alts.push_back(
        g.seq({digit(g, c - '0'), fraction_between(g, nlo, lo_strict, nhi, hi_strict, true)}));
  }
  return g.alt(std::move(alts));
}

// The fraction part of a number ("" or "." digits) under the same bounds.
int fraction_part(Grammar& g, const std::optional<std::string>& lo, bool lo_strict,
                  const std::optional<std::string>& hi, bool hi_strict) {
  std::vector<int> alts;
  // No fraction at all: the value of the fraction is 0.
  const bool zero_ok = (!lo || (lo->empty() && !lo_strict)) && (!hi || !hi->empty() || !hi_strict);
  if (zero_ok) alts.push_back(g.empty());
  alts.push_back(g.seq({g.literal("."), fraction_between(g, lo, lo_strict, hi, hi_strict, false)}));
  return g.alt(std::move(alts));
}

// Non-negative decimals I.F (no exponent) within r: the integer part against the bounds'
// integer parts, and the fraction where they are equal.
int magnitude_range(Grammar& g, const MagnitudeRange& r) {
  const auto whole = [&](std::uint64_t v) { return g.literal(std::to_string(v)); };
  const auto frac = [](const std::optional<DecimalDigits>& d) {
    return d ? std::optional<std::string>(d->frac) : std::nullopt;
  };
  const int any_frac =
      g.repeat(g.seq({g.literal("."), g.repeat(g.byte_range('0', '9'), 1, -1)}), 0, 1);
  const std::uint64_t li = r.min ? r.min->whole : 0;
  std::vector<int> alts;
  if (r.max && r.max->whole < li) return g.alt({});
  if (r.max && r.max->whole == li) {
    alts.push_back(g.seq(
        {whole(li), fraction_part(g, frac(r.min), r.min_exclusive, r.max->frac, r.max_exclusive)}));
    return g.alt(std::move(alts));
  }
  // I == li: the fraction decides the lower side.
  alts.push_back(
      g.seq({whole(li), fraction_part(g, frac(r.min), r.min_exclusive, std::nullopt, false)}));
  // li < I < max.whole: any fraction.
  if (!r.max || r.max->whole > li + 1) {
    alts.push_back(
        g.seq({natural_range(g, std::to_string(li + 1),
                             r.max ? std::optional<std::string>(std::to_string(r.max->whole - 1))
                                   : std::nullopt),
               any_frac}));
  }
  // I == max.whole: the fraction decides the upper side.
  if (r.max) {
    alts.push_back(g.seq({whole(r.max->whole),
                          fraction_part(g, std::nullopt, false, r.max->frac, r.max_exclusive)}));
  }
  return g.alt(std::move(alts));
}

}  // namespace

std::optional<DecimalDigits> decimal_digits(double v) {
  if (!(std::abs(v) < 1e15) || (v != 0 && std::abs(v) < 1e-12)) return std::nullopt;
  std::string s = fmt::format("{:.15f}", std::abs(v));
  for (int prec = 0; prec <= 15; ++prec) {
    const std::string t = fmt::format("{:.{}f}", std::abs(v), prec);
    if (std::strtod(t.c_str(), nullptr) == std::abs(v)) {
      s = t;
      break;
    }
  }
  DecimalDigits d;
  const auto dot = s.find('.');
  d.whole = std::stoull(s.substr(0, dot));
  if (dot != std::string::npos) d.frac = s.substr(dot + 1);
  while (!d.frac.empty() && d.frac.back() == '0') d.frac.pop_back();
  return d;
}

int integer_zero_fraction(Grammar& g) {
  return g.repeat(g.seq({g.literal("."), g.repeat(g.literal("0"), 1, 8)}), 0, 1);
}

DecimalInteger::DecimalInteger(std::int64_t v)
    : negative(v < 0),
      magnitude(v < 0 ? std::to_string(-static_cast<std::uint64_t>(v)) : std::to_string(v)) {}

DecimalInteger DecimalInteger::from_double(double v) {
  DecimalInteger d;
  d.negative = v < 0;
  const double m = std::abs(v);
  if (m < 0x1p53) {
    d.magnitude = fmt::format("{:.0f}", m);  // exact
    return d;
  }
  // Beyond 2^53 the double is the nearest to what the schema wrote: take the shortest digits
  // that read back as it (1e30, not 1000000000000000019884624838656), as written.
  const std::string e = fmt::format("{:e}", m);  // d.ddddde+XX, up to 17 significant digits
  std::string shortest = e;
  for (int prec = 0; prec <= 17; ++prec) {
    shortest = fmt::format("{:.{}e}", m, prec);
    if (std::strtod(shortest.c_str(), nullptr) == m) break;
  }
  const auto epos = shortest.find('e');
  std::string digits = shortest.substr(0, 1) + (epos > 2 ? shortest.substr(2, epos - 2) : "");
  const int exponent = std::stoi(shortest.substr(epos + 1));
  const int zeros = exponent - static_cast<int>(digits.size()) + 1;  // >= 0 beyond 2^53
  d.magnitude = digits.append(static_cast<std::size_t>(std::max(zeros, 0)), '0');
  return d;
}

DecimalInteger DecimalInteger::plus(int delta) const {
  DecimalInteger d = *this;
  const bool away_from_zero = (delta > 0) != negative;  // the magnitude grows
  if (away_from_zero) {
    d.magnitude = natural_increment(magnitude);
  } else if (magnitude == "0") {  // 0 - 1
    d.magnitude.assign(1, '1');
    d.negative = true;
  } else {
    d.magnitude = natural_decrement(magnitude);
    if (d.magnitude == "0") d.negative = false;
  }
  return d;
}

bool operator<(const DecimalInteger& a, const DecimalInteger& b) {
  if (a.negative != b.negative) return a.negative;
  return a.negative ? natural_less(b.magnitude, a.magnitude)
                    : natural_less(a.magnitude, b.magnitude);
}

int integer_range(Grammar& g, const IntegerRange& range) {
  const auto& a = range.min;
  const auto& b = range.max;
  std::vector<int> alts;
  if (!b || !b->negative) {
    alts.push_back(natural_range(g, a && !a->negative ? a->magnitude : "0",
                                 b ? std::optional<std::string>(b->magnitude) : std::nullopt));
  }
  if (!a || a->negative) {  // negative part: magnitudes in [max(1, -b), -a]
    const std::string m_lo = b && b->negative ? b->magnitude : "1";
    alts.push_back(g.seq(
        {g.literal("-"),
         natural_range(g, m_lo, a ? std::optional<std::string>(a->magnitude) : std::nullopt)}));
  }
  return g.seq({g.alt(std::move(alts)), integer_zero_fraction(g)});
}

int decimal_range(Grammar& g, const DecimalRange& range) {
  std::vector<int> alts;
  if (range.nonnegative) alts.push_back(magnitude_range(g, *range.nonnegative));
  if (range.negative) alts.push_back(g.seq({g.literal("-"), magnitude_range(g, *range.negative)}));
  return g.alt(std::move(alts));
}

int multiple_of(Grammar& g, int divisor) {
  const auto m = static_cast<std::size_t>(divisor);
  // rem[r]: the digits after a prefix whose value is r modulo the divisor.
  std::vector<int> rem(m);
  const std::string base = fmt::format("mult{}_{}", divisor, g.rules.size());
  for (std::size_t r = 0; r < m; ++r) rem[r] = g.add_rule(fmt::format("{}_r{}", base, r));
  for (std::size_t r = 0; r < m; ++r) {
    std::vector<int> alts;
    if (r == 0) alts.push_back(g.empty());
    for (std::size_t d = 0; d <= 9; ++d)
      alts.push_back(g.seq({digit(g, static_cast<int>(d)), g.ref(rem[(r * 10 + d) % m])}));
    g.define(rem[r], g.alt(std::move(alts)));
  }
  std::vector<int> first{g.literal("0")};
  for (std::size_t d = 1; d <= 9; ++d)
    first.push_back(g.seq({digit(g, static_cast<int>(d)), g.ref(rem[d % m])}));
  return g.seq({g.repeat(g.literal("-"), 0, 1), g.alt(std::move(first)), integer_zero_fraction(g)});
}

}  // namespace inferlab
