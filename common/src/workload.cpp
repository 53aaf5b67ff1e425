// Workloads: a seeded generator and a JSONL trace reader.
#include "inferlab/workload.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/error.hpp"
#include "inferlab/input_checks.hpp"
#include "inferlab/safe_files.hpp"

namespace inferlab {

namespace {

// Uniform in (0, 1]: never 0, so logarithms and negative powers stay finite.
double open_unit(Rng& rng) { return 1.0 - static_cast<double>(rng.next_f32()); }

// A standard normal by Box-Muller (one of the pair; the other is discarded for simplicity).
double standard_normal(Rng& rng) {
  const double u1 = open_unit(rng), u2 = static_cast<double>(rng.next_f32());
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int clamp_length(double x, int cap) {
  const double r = std::round(x);
  if (!(r >= 1.0)) return 1;  // also catches NaN
  return r >= cap ? cap : static_cast<int>(r);
}

}  // namespace

double LengthDistribution::sample(Rng& rng) const {
  switch (kind) {
    case LengthKind::fixed:
      return mean;
    case LengthKind::uniform:
      return lo + std::floor(static_cast<double>(rng.next_f32()) * (hi - lo + 1));
    case LengthKind::lognormal: {
      // E[exp(N(mu, s^2))] = exp(mu + s^2 / 2): choose mu so the mean is `mean`.
      const double mu = std::log(mean) - 0.5 * sigma * sigma;
      return std::exp(mu + sigma * standard_normal(rng));
    }
    case LengthKind::pareto: {
      // Inverse CDF: x = xm / U^(1/alpha); E[x] = alpha xm / (alpha - 1).
      const double xm = mean * (alpha - 1.0) / alpha;
      return xm / std::pow(open_unit(rng), 1.0 / alpha);
    }
  }
  return mean;
}

std::string LengthDistribution::describe() const {
  switch (kind) {
    case LengthKind::fixed: return fmt::format("fixed:{:g}", mean);
    case LengthKind::uniform: return fmt::format("uniform:{}:{}", lo, hi);
    case LengthKind::lognormal: return fmt::format("lognormal:{:g}:{:g}", mean, sigma);
    case LengthKind::pareto: return fmt::format("pareto:{:g}:{:g}", mean, alpha);
  }
  return "?";
}

LengthDistribution parse_length_distribution(const std::string& text) {
  const std::string usage =
      "expected fixed:N, uniform:LO:HI, lognormal:MEAN[:SIGMA] or pareto:MEAN[:ALPHA]";
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  auto number = [&](std::size_t i) {
    try {
      std::size_t used = 0;
      const double v = std::stod(parts.at(i), &used);
      if (used != parts[i].size() || !std::isfinite(v)) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      throw Error(fmt::format("length distribution '{}': bad number: {}", text, usage));
    }
  };
  LengthDistribution d;
  const std::string kind = parts.empty() ? "" : parts[0];
  if (kind == "fixed" && parts.size() == 2) {
    d.kind = LengthKind::fixed;
    d.mean = number(1);
  } else if (kind == "uniform" && parts.size() == 3) {
    d.kind = LengthKind::uniform;
    d.lo = static_cast<int>(number(1));
    d.hi = static_cast<int>(number(2));
    if (d.lo < 1 || d.lo > d.hi)
      throw Error(fmt::format("length distribution '{}': need 1 <= LO <= HI", text));
    d.mean = 0.5 * (d.lo + d.hi);
  } else if (kind == "lognormal" && (parts.size() == 2 || parts.size() == 3)) {
    d.kind = LengthKind::lognormal;
    d.mean = number(1);
    if (parts.size() == 3) d.sigma = number(2);
    if (d.sigma < 0) throw Error(fmt::format("length distribution '{}': sigma < 0", text));
  } else if (kind == "pareto" && (parts.size() == 2 || parts.size() == 3)) {
    d.kind = LengthKind::pareto;
    d.mean = number(1);
    if (parts.size() == 3) d.alpha = number(2);
    if (d.alpha <= 1.0)
      throw Error(fmt::format("length distribution '{}': alpha must be > 1 (else the mean is "
                              "infinite)", text));
  } else {
    throw Error(fmt::format("length distribution '{}': {}", text, usage));
  }
  if (d.mean <= 0) throw Error(fmt::format("length distribution '{}': mean must be > 0", text));
  return d;
}

std::vector<Request> generate_workload(const WorkloadSpec& spec) {
  if (spec.requests < 1 || spec.requests > kMaxRequests)
    throw Error(fmt::format("requests {} is outside [1, {}]", spec.requests, kMaxRequests));
  if (spec.max_prompt < 1 || spec.max_output < 1)
    throw Error("workload caps on prompt and output lengths must be >= 1");
  if (!(std::isfinite(spec.rate) && spec.rate >= 0.0))
    throw Error(fmt::format("arrival rate {} must be finite and >= 0 (0: all at once)", spec.rate));
  require_allocation(double(spec.requests) * sizeof(Request),
                     fmt::format("a workload of {} requests", spec.requests));
  // Three independent streams, so changing one distribution leaves the others' draws alone.
  Rng arrivals(spec.seed * 3 + 1), prompts(spec.seed * 3 + 2), outputs(spec.seed * 3 + 3);
  std::vector<Request> out;
  double t = 0.0;
  for (int i = 0; i < spec.requests; ++i) {
    if (spec.rate > 0.0 && i > 0) t += -std::log(open_unit(arrivals)) / spec.rate;
    Request r;
    r.id = i;
    r.arrival = spec.rate > 0.0 ? t : 0.0;
    r.prompt_len = clamp_length(spec.prompt.sample(prompts), spec.max_prompt);
    r.max_tokens = clamp_length(spec.output.sample(outputs), spec.max_output);
    if (spec.max_tokens > 0) {
      r.output_len = std::min(r.max_tokens, spec.max_tokens);
      r.max_tokens = spec.max_tokens;
    }
    r.sampling = spec.sampling;
    r.sampling.seed = spec.sampling.seed + static_cast<std::uint64_t>(i);
    r.ignore_eos = true;
    out.push_back(std::move(r));
  }
  if (t > kMaxArrivalSeconds) {
    throw Error(fmt::format("at a rate of {:g}/s the last of {} requests arrives at {:.3g} s, after "
                            "the limit of {:g} s: raise the rate or lower the requests",
                            spec.rate, spec.requests, t, kMaxArrivalSeconds));
  }
  return out;
}

std::vector<Request> read_trace(std::istream& in, const std::string& source,
                                const SamplingParams& defaults) {
  static const std::set<std::string> kKeys = {
      "arrival",           "prompt",           "prompt_len",        "max_tokens",
      "temperature",       "top_k",            "top_p",             "min_p",
      "repetition_penalty", "frequency_penalty", "presence_penalty", "seed",
      "ignore_eos"};
  std::vector<Request> out;
  std::string line;
  for (long lineno = 1;; ++lineno) {
    auto fail = [&](const std::string& what) {
      return Error(fmt::format("{}:{}: {}", source, lineno, what));
    };
    try {
      if (!read_bounded_line(in, line, kMaxTraceLineBytes)) break;  // a huge line is refused
    } catch (const Error& e) {
      throw fail(e.what());
    }
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (out.size() >= static_cast<std::size_t>(kMaxRequests))
      throw fail(fmt::format("more than {} requests", kMaxRequests));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number overflow
      throw fail(fmt::format("not valid JSON ({})", e.what()));
    }
    if (!j.is_object()) throw fail("expected a JSON object, one request per line");
    for (const auto& [key, value] : j.items()) {
      if (!kKeys.count(key)) throw fail(fmt::format("unknown key '{}'", key));
    }
    Request r;
    r.id = static_cast<int>(out.size());
    r.sampling = defaults;
    r.sampling.seed = defaults.seed + static_cast<std::uint64_t>(r.id);
    // Integers are read as 64-bit and range-checked, never converted with wrap-around
    // (4294967304 is not 8); a number written with a fraction or exponent is not an integer.
    auto get_integer = [&](const char* key, auto& dst, long double lo, long double hi) {
      if (!j.contains(key)) return false;
      const nlohmann::json& v = j[key];
      if (!v.is_number()) throw fail(fmt::format("'{}' must be a number", key));
      if (!v.is_number_integer())
        throw fail(fmt::format("'{}' must be an integer in [{:.0Lf}, {:.0Lf}], got {}", key, lo, hi,
                               v.dump()));
      const long double x = v.is_number_unsigned()
                                ? static_cast<long double>(v.get<std::uint64_t>())
                                : static_cast<long double>(v.get<std::int64_t>());
      if (x < lo || x > hi)
        throw fail(fmt::format("'{}' {} is outside [{:.0Lf}, {:.0Lf}]", key, v.dump(), lo, hi));
      using T = std::remove_reference_t<decltype(dst)>;
      dst = v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>())
                                   : static_cast<T>(v.get<std::int64_t>());
      return true;
    };
    auto get_real = [&](const char* key, auto& dst) {
      if (!j.contains(key)) return false;
      if (!j[key].is_number()) throw fail(fmt::format("'{}' must be a number", key));
      const double x = j[key].get<double>();
      if (!std::isfinite(x)) throw fail(fmt::format("'{}' must be a finite number", key));
      dst = static_cast<std::remove_reference_t<decltype(dst)>>(x);
      return true;
    };
    constexpr long double kIntMax = std::numeric_limits<int>::max();
    get_real("arrival", r.arrival);
    if (!(r.arrival >= 0 && r.arrival <= kMaxArrivalSeconds))
      throw fail(fmt::format("'arrival' {} is outside [0, {:g}] seconds", j["arrival"].dump(),
                             kMaxArrivalSeconds));
    if (!get_integer("max_tokens", r.max_tokens, 1, kIntMax)) throw fail("missing 'max_tokens'");
    const bool has_text = j.contains("prompt"), has_len = j.contains("prompt_len");
    if (has_text == has_len) throw fail("give exactly one of 'prompt' (text) and 'prompt_len'");
    if (has_text) {
      if (!j["prompt"].is_string()) throw fail("'prompt' must be a string");
      r.prompt = j["prompt"].get<std::string>();
    } else {
      get_integer("prompt_len", r.prompt_len, 1, kIntMax);  // BOS included
    }
    SamplingParams& s = r.sampling;
    get_real("temperature", s.temperature);
    get_integer("top_k", s.top_k, 0, kIntMax);
    get_real("top_p", s.top_p);
    get_real("min_p", s.min_p);
    get_real("repetition_penalty", s.repetition_penalty);
    get_real("frequency_penalty", s.frequency_penalty);
    get_real("presence_penalty", s.presence_penalty);
    get_integer("seed", s.seed, 0, static_cast<long double>(std::numeric_limits<std::uint64_t>::max()));
    if (j.contains("ignore_eos")) {
      if (!j["ignore_eos"].is_boolean()) throw fail("'ignore_eos' must be true or false");
      r.ignore_eos = j["ignore_eos"].get<bool>();
    }
    try {
      s.validate();
    } catch (const Error& e) {
      throw fail(e.what());
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw Error(fmt::format("{}: no request in the trace", source));
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  return out;
}

std::vector<Request> load_trace(const std::string& path, const SamplingParams& defaults) {
  std::ifstream in = open_regular_file(path, "trace file");
  return read_trace(in, path, defaults);
}

}  // namespace inferlab
