// Pearson's chi-square goodness-of-fit test.
#include "inferlab/analysis/chi_square.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// Regularised lower incomplete gamma P(a, x) by its series (converges fast for x < a + 1).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-15) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Regularised upper incomplete gamma Q(a, x) by Lentz's continued fraction (x >= a + 1).
double gamma_q_fraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double chi_square_survival(double x, int dof) {
  if (dof < 1) throw Error(fmt::format("chi-square: {} degrees of freedom (must be >= 1)", dof));
  if (!(x > 0.0)) return 1.0;
  const double a = 0.5 * dof, h = 0.5 * x;
  return h < a + 1.0 ? 1.0 - gamma_p_series(a, h) : gamma_q_fraction(a, h);
}

ChiSquareResult chi_square_test(std::span<const double> expected, std::span<const long> observed,
                                double min_expected) {
  if (expected.size() != observed.size()) {
    throw Error(fmt::format("chi-square: {} probabilities but {} counts", expected.size(),
                            observed.size()));
  }
  ChiSquareResult r;
  for (long o : observed) r.samples += o;
  if (r.samples <= 0) throw Error("chi-square: no observations");
  const double n = static_cast<double>(r.samples);

  struct Bin {
    double expected = 0.0;
    double observed = 0.0;
  };
  std::vector<Bin> bins;
  Bin pooled;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] <= 0.0 && observed[i] > 0) {
      // Impossible under the null hypothesis: no finite statistic expresses it.
      r.statistic = INFINITY;
      r.p_value = 0.0;
      r.bins = static_cast<int>(expected.size());
      r.dof = r.bins - 1;
      return r;
    }
    const Bin b{expected[i] * n, static_cast<double>(observed[i])};
    if (b.expected >= min_expected) {
      bins.push_back(b);
    } else {
      pooled.expected += b.expected;
      pooled.observed += b.observed;
    }
  }
  if (pooled.expected >= min_expected) {
    bins.push_back(pooled);
  } else if (pooled.expected > 0.0 || pooled.observed > 0.0) {
    if (bins.empty()) throw Error("chi-square: every category's expected count is too small");
    auto smallest = std::min_element(bins.begin(), bins.end(), [](const Bin& x, const Bin& y) {
      return x.expected < y.expected;
    });
    smallest->expected += pooled.expected;
    smallest->observed += pooled.observed;
  }
  if (bins.size() < 2) {
    throw Error(fmt::format("chi-square: {} bin(s) with expected count >= {} (need 2)", bins.size(),
                            min_expected));
  }
  for (const Bin& b : bins) {
    const double d = b.observed - b.expected;
    r.statistic += d * d / b.expected;
  }
  r.bins = static_cast<int>(bins.size());
  r.dof = r.bins - 1;
  r.p_value = chi_square_survival(r.statistic, r.dof);
  return r;
}

}  // namespace inferlab
