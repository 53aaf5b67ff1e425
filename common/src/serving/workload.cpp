// Workloads: a seeded generator and a JSONL workload-file reader.
#include "inferlab/serving/workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/base/input_checks.hpp"
#include "inferlab/base/safe_files.hpp"

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
    case LengthKind::fixed:
      return fmt::format("fixed:{:g}", mean);
    case LengthKind::uniform:
      return fmt::format("uniform:{}:{}", lo, hi);
    case LengthKind::lognormal:
      return fmt::format("lognormal:{:g}:{:g}", mean, sigma);
    case LengthKind::pareto:
      return fmt::format("pareto:{:g}:{:g}", mean, alpha);
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
      throw Error(
          fmt::format("length distribution '{}': alpha must be > 1 (else the mean is "
                      "infinite)",
                      text));
  } else {
    throw Error(fmt::format("length distribution '{}': {}", text, usage));
  }
  if (d.mean <= 0) throw Error(fmt::format("length distribution '{}': mean must be > 0", text));
  return d;
}

WorkloadKind parse_workload_kind(const std::string& name) {
  for (WorkloadKind k : {WorkloadKind::random, WorkloadKind::shared_prefix, WorkloadKind::few_shot,
                         WorkloadKind::multi_turn, WorkloadKind::rag})
    if (name == workload_kind_name(k)) return k;
  throw Error(
      fmt::format("unknown workload '{}' (expected random, shared-prefix, few-shot, "
                  "multi-turn or rag)",
                  name));
}

const char* workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::random:
      return "random";
    case WorkloadKind::shared_prefix:
      return "shared-prefix";
    case WorkloadKind::few_shot:
      return "few-shot";
    case WorkloadKind::multi_turn:
      return "multi-turn";
    case WorkloadKind::rag:
      return "rag";
  }
  return "?";
}

namespace {

// The seed of the generator's stream number `stream` (splitmix64 of the two): the prompt
// contents and the choices get streams of their own, apart from the three of the random kind.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (stream + 0x51ull));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// An integer in [0, n) (n <= 2^32): the high half of a 32 x 32-bit product, bias < n / 2^32.
int uniform_index(Rng& rng, int n) {
  return static_cast<int>((std::uint64_t{rng.next_u32()} * static_cast<std::uint64_t>(n)) >> 32);
}

// Appends n made-up prompt ids in [kFirstWorkloadToken, kWorkloadVocab).
void append_tokens(std::vector<int>& out, std::int64_t n, Rng& rng) {
  for (std::int64_t i = 0; i < n; ++i)
    out.push_back(kFirstWorkloadToken + uniform_index(rng, kWorkloadVocab - kFirstWorkloadToken));
}

std::vector<int> random_tokens(int n, Rng& rng) {
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(n));
  append_tokens(ids, n, rng);
  return ids;
}

// Exponential with the given mean; u strictly inside (0, 1), so a draw is never 0 or infinite.
double exponential(Rng& rng, double mean) {
  const double u = (static_cast<double>(rng.next_u32() >> 8) + 0.5) / 16777216.0;
  return -mean * std::log(u);
}

std::string tenant_name(const WorkloadSpec& spec, int index) {
  return spec.tenants > 1 ? fmt::format("t{}", index % spec.tenants) : std::string();
}

void check_kind_parameters(const WorkloadSpec& spec) {
  const char* name = workload_kind_name(spec.kind);
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(fmt::format("workload {}: {}", name, what));
  };
  need(spec.tenants >= 1, fmt::format("tenants {} must be >= 1", spec.tenants));
  constexpr int kMaxPoolTokens = 1 << 20;  // one prefix, example set or document
  switch (spec.kind) {
    case WorkloadKind::random:
      break;
    case WorkloadKind::shared_prefix:
    case WorkloadKind::few_shot: {
      const int min_len = spec.kind == WorkloadKind::few_shot ? 2 : 1;  // instruction + examples
      need(spec.prefixes >= 1 && spec.prefixes <= 10000,
           fmt::format("prefixes {} is outside [1, 10000]", spec.prefixes));
      need(spec.prefix_len >= min_len && spec.prefix_len <= kMaxPoolTokens,
           fmt::format("prefix length {} is outside [{}, {}]", spec.prefix_len, min_len,
                       kMaxPoolTokens));
      need(spec.shared_fraction >= 0.0 && spec.shared_fraction <= 1.0,  // NaN fails too
           fmt::format("shared fraction {} is outside [0, 1]", spec.shared_fraction));
      require_allocation(double(spec.prefixes) * spec.prefix_len * sizeof(int),
                         fmt::format("{} prefixes of {} tokens", spec.prefixes, spec.prefix_len));
      break;
    }
    case WorkloadKind::multi_turn:
      need(spec.prefix_len >= 0 && spec.prefix_len <= kMaxPoolTokens,
           fmt::format("system prompt length {} is outside [0, {}]", spec.prefix_len,
                       kMaxPoolTokens));
      need(spec.turns >= 1, fmt::format("turns {} must be >= 1", spec.turns));
      need(std::isfinite(spec.think_time) && spec.think_time >= 0.0,
           fmt::format("think time {} must be finite and >= 0", spec.think_time));
      // BOS + the system prompt + the shortest turn (a 1-token message, 1 output token).
      need(std::int64_t{spec.prefix_len} + 3 <= spec.max_conversation,
           fmt::format("a system prompt of {} tokens leaves no room for a turn in a "
                       "conversation of at most {} tokens",
                       spec.prefix_len, spec.max_conversation));
      break;
    case WorkloadKind::rag:
      need(spec.docs >= 1 && spec.docs <= 1'000'000,
           fmt::format("documents {} is outside [1, 1000000]", spec.docs));
      need(spec.doc_len >= 1 && spec.doc_len <= kMaxPoolTokens,
           fmt::format("document length {} is outside [1, {}]", spec.doc_len, kMaxPoolTokens));
      require_allocation(double(spec.docs) * spec.doc_len * sizeof(int),
                         fmt::format("{} documents of {} tokens", spec.docs, spec.doc_len));
      break;
  }
}

// The most prompt ids one request of the workload may hold (its own part at its cap included).
double max_ids_per_request(const WorkloadSpec& spec) {
  switch (spec.kind) {
    case WorkloadKind::random:
      return 0.0;
    case WorkloadKind::shared_prefix:
    case WorkloadKind::few_shot:
    case WorkloadKind::multi_turn:
      return double(spec.prefix_len) + spec.max_prompt;
    case WorkloadKind::rag:
      return 3.0 * spec.doc_len + spec.max_prompt;
  }
  return 0.0;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  return fmt::format("{:.0f}%", 100.0 * double(part) / double(whole));
}

}  // namespace

std::vector<Request> generate_workload(const WorkloadSpec& spec, std::string* shape) {
  if (spec.requests < 1 || spec.requests > kMaxRequests)
    throw Error(fmt::format("requests {} is outside [1, {}]", spec.requests, kMaxRequests));
  if (spec.max_prompt < 1 || spec.max_output < 1)
    throw Error("workload caps on prompt and output lengths must be >= 1");
  if (!(std::isfinite(spec.rate) && spec.rate >= 0.0))
    throw Error(fmt::format("arrival rate {} must be finite and >= 0 (0: all at once)", spec.rate));
  check_kind_parameters(spec);
  require_allocation(
      double(spec.requests) * (sizeof(Request) + max_ids_per_request(spec) * sizeof(int)),
      fmt::format("a workload of {} requests", spec.requests));
  // Three independent streams, so changing one distribution leaves the others' draws alone.
  Rng arrivals(spec.seed * 3 + 1), prompts(spec.seed * 3 + 2), outputs(spec.seed * 3 + 3);
  // The prompts' contents and the choices (which prefix, task or documents) have their own.
  Rng content(stream_seed(spec.seed, 1)), choices(stream_seed(spec.seed, 2));
  Rng thinking(stream_seed(spec.seed, 3));

  // The shared material: K prefixes, or the instruction and K tasks' examples, or D documents,
  // or the system prompt.
  std::vector<int> instruction;
  std::vector<std::vector<int>> pool;
  std::vector<double> zipf_cdf;  // rag: cumulative popularity of documents 0..D-1
  switch (spec.kind) {
    case WorkloadKind::random:
      break;
    case WorkloadKind::shared_prefix:
      for (int k = 0; k < spec.prefixes; ++k)
        pool.push_back(random_tokens(spec.prefix_len, content));
      break;
    case WorkloadKind::few_shot:
      instruction = random_tokens(spec.prefix_len / 3, content);
      for (int k = 0; k < spec.prefixes; ++k)
        pool.push_back(random_tokens(spec.prefix_len - spec.prefix_len / 3, content));
      break;
    case WorkloadKind::multi_turn:
      instruction = random_tokens(spec.prefix_len, content);  // the system prompt
      break;
    case WorkloadKind::rag: {
      double total = 0.0;
      for (int d = 0; d < spec.docs; ++d) {
        pool.push_back(random_tokens(spec.doc_len, content));
        total += std::pow(d + 1.0, -kRagZipfExponent);
        zipf_cdf.push_back(total);
      }
      for (double& c : zipf_cdf) c /= total;
      break;
    }
  }

  // What was drawn, for the description.
  std::int64_t shared = 0, docs_cited = 0, conversations = 0, ended_early = 0;
  std::vector<std::int64_t> uses(pool.size(), 0);
  std::vector<int> turns_of;  // multi-turn: turns of each conversation

  // Multi-turn: the conversation the next turn may continue.
  int turn = 0;
  std::int64_t conversation_tokens = 0;  // worst case so far: BOS + system + messages + outputs

  std::vector<Request> out;
  double t = 0.0;
  for (int i = 0; i < spec.requests; ++i) {
    Request r;
    r.id = i;
    const bool multi_turn = spec.kind == WorkloadKind::multi_turn;
    // Draw order as in chapter 04 (arrival, prompt, output), so `random` is unchanged.
    // Multi-turn draws its gaps per conversation instead, below.
    const double gap =
        spec.rate > 0.0 && i > 0 && !multi_turn ? -std::log(open_unit(arrivals)) / spec.rate : 0.0;
    t += gap;
    r.arrival = spec.rate > 0.0 ? t : 0.0;
    const int own = clamp_length(spec.prompt.sample(prompts), spec.max_prompt);
    r.max_tokens = clamp_length(spec.output.sample(outputs), spec.max_output);
    if (spec.max_tokens > 0) {
      r.output_len = std::min(r.max_tokens, spec.max_tokens);
      r.max_tokens = spec.max_tokens;
    }
    r.sampling = spec.sampling;
    r.sampling.seed = spec.sampling.seed + static_cast<std::uint64_t>(i);
    r.ignore_eos = true;
    r.tenant = tenant_name(spec, i);
    switch (spec.kind) {
      case WorkloadKind::random:
        r.prompt_len = own;
        break;
      case WorkloadKind::shared_prefix: {
        if (static_cast<double>(choices.next_f32()) < spec.shared_fraction) {
          const int k = uniform_index(choices, spec.prefixes);
          r.prompt_ids = pool[k];
          ++shared;
          ++uses[k];
        }
        // A request without a prefix gets a unique prompt of the same total length.
        append_tokens(r.prompt_ids, r.prompt_ids.empty() ? spec.prefix_len + own : own, content);
        break;
      }
      case WorkloadKind::few_shot: {
        const int k = uniform_index(choices, spec.prefixes);
        r.prompt_ids = instruction;
        r.prompt_ids.insert(r.prompt_ids.end(), pool[k].begin(), pool[k].end());
        append_tokens(r.prompt_ids, own, content);
        ++uses[k];
        break;
      }
      case WorkloadKind::multi_turn: {
        const std::int64_t cost = std::int64_t{own} + r.max_tokens;
        const bool fits = conversation_tokens + cost <= spec.max_conversation;
        if (turn > 0 && turn < spec.turns && !fits) ++ended_early;
        if (turn == 0 || turn == spec.turns || !fits) {
          // A new conversation: it starts by the Poisson process.
          if (spec.rate > 0.0 && i > 0) t += -std::log(open_unit(arrivals)) / spec.rate;
          turn = 0;
          conversation_tokens = 1 + std::int64_t{spec.prefix_len};
          ++conversations;
          turns_of.push_back(0);
        }
        ++turn;
        ++turns_of.back();
        conversation_tokens += cost;
        r.tenant = tenant_name(spec, static_cast<int>(conversations - 1));
        if (turn == 1) {
          r.arrival = spec.rate > 0.0 ? t : 0.0;
          r.prompt_ids = instruction;
        } else {
          r.parent = i - 1;
          r.arrival = 0.0;  // the engine schedules it think_time after its parent finishes
          r.think_time = exponential(thinking, spec.think_time);
        }
        append_tokens(r.prompt_ids, own, content);
        break;
      }
      case WorkloadKind::rag: {
        const int want = std::min(1 + uniform_index(choices, 3), spec.docs);
        std::array<int, 3> picked{};
        for (int n = 0; n < want;) {
          // Drawing from the whole pool and redrawing repeats is drawing without replacement
          // in proportion to the popularity of the documents left.
          const double u = static_cast<double>(choices.next_f32());
          const int d = static_cast<int>(std::upper_bound(zipf_cdf.begin(), zipf_cdf.end() - 1, u) -
                                         zipf_cdf.begin());
          if (std::find(picked.begin(), picked.begin() + n, d) != picked.begin() + n) continue;
          picked[static_cast<std::size_t>(n++)] = d;
          r.prompt_ids.insert(r.prompt_ids.end(), pool[d].begin(), pool[d].end());
          ++uses[d];
        }
        docs_cited += want;
        append_tokens(r.prompt_ids, own, content);
        break;
      }
    }
    out.push_back(std::move(r));
  }
  if (t > kMaxArrivalSeconds) {
    throw Error(
        fmt::format("at a rate of {:g}/s the last of {} requests arrives at {:.3g} s, after "
                    "the limit of {:g} s: raise the rate or lower the requests",
                    spec.rate, spec.requests, t, kMaxArrivalSeconds));
  }
  if (shape) {
    const std::int64_t n = spec.requests;
    const std::int64_t most_used = uses.empty() ? 0 : *std::max_element(uses.begin(), uses.end());
    switch (spec.kind) {
      case WorkloadKind::random:
        *shape = "random prompts";
        break;
      case WorkloadKind::shared_prefix:
        *shape = fmt::format(
            "shared-prefix: {} of {} requests ({}) start with one of {} prefixes "
            "of {} tokens (chosen uniformly), the rest with a unique prompt of "
            "the same length",
            shared, n, percent(shared, n), spec.prefixes, spec.prefix_len);
        break;
      case WorkloadKind::few_shot:
        *shape = fmt::format(
            "few-shot: every prompt is one instruction of {} tokens + the "
            "examples of one of {} tasks ({} tokens; the busiest task has {} "
            "requests) + a unique question",
            instruction.size(), spec.prefixes, pool.front().size(), most_used);
        break;
      case WorkloadKind::multi_turn: {
        const int lo = *std::min_element(turns_of.begin(), turns_of.end());
        const int hi = *std::max_element(turns_of.begin(), turns_of.end());
        *shape = fmt::format(
            "multi-turn: {} conversations of {}-{} turns (mean {:.1f}, at most "
            "{}; {} ended early to stay within {} tokens), {}, think time "
            "exponential with mean {:g} s",
            conversations, lo, hi, double(n) / double(conversations), spec.turns, ended_early,
            spec.max_conversation,
            spec.prefix_len > 0 ? fmt::format("a shared system prompt of {} "
                                              "tokens",
                                              spec.prefix_len)
                                : std::string("no system prompt"),
            spec.think_time);
        break;
      }
      case WorkloadKind::rag:
        *shape = fmt::format(
            "rag: each prompt holds 1-3 documents (mean {:.2f}) of a pool of {} "
            "of {} tokens, Zipf popularity with exponent {:g} (the most popular "
            "is in {} of the prompts), + a unique question",
            double(docs_cited) / double(n), spec.docs, spec.doc_len, kRagZipfExponent,
            percent(most_used, n));
        break;
    }
    if (spec.tenants > 1) *shape += fmt::format(", {} tenants (round-robin)", spec.tenants);
  }
  return out;
}

std::vector<Request> read_workload_file(std::istream& in, const std::string& source,
                                        const SamplingParams& defaults) {
  static const std::set<std::string> kKeys = {"arrival",
                                              "prompt",
                                              "prompt_len",
                                              "max_tokens",
                                              "temperature",
                                              "top_k",
                                              "top_p",
                                              "min_p",
                                              "repetition_penalty",
                                              "frequency_penalty",
                                              "presence_penalty",
                                              "seed",
                                              "ignore_eos",
                                              "prompt_ids",
                                              "tenant",
                                              "parent",
                                              "think_time"};
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
    const int prompt_forms =
        int(j.contains("prompt")) + int(j.contains("prompt_len")) + int(j.contains("prompt_ids"));
    if (prompt_forms != 1)
      throw fail("give exactly one of 'prompt' (text), 'prompt_len' and 'prompt_ids'");
    if (j.contains("prompt")) {
      if (!j["prompt"].is_string()) throw fail("'prompt' must be a string");
      r.prompt = j["prompt"].get<std::string>();
      if (r.prompt.empty()) throw fail("'prompt' is empty (a request needs at least one token)");
    } else if (j.contains("prompt_len")) {
      get_integer("prompt_len", r.prompt_len, 1, kIntMax);  // BOS included
    } else {
      const nlohmann::json& ids = j["prompt_ids"];
      if (!ids.is_array()) throw fail("'prompt_ids' must be an array of token ids");
      if (ids.empty()) throw fail("'prompt_ids' is empty (a request needs at least one token)");
      r.prompt_ids.reserve(ids.size());
      for (std::size_t k = 0; k < ids.size(); ++k) {
        // Whether an id is in the served model's vocabulary is checked against that model
        // (check_workload_lengths); here only that it is a token id at all.
        if (!ids[k].is_number_integer() ||
            (ids[k].is_number_unsigned()
                 ? ids[k].get<std::uint64_t>() > std::uint64_t(kIntMax)
                 : ids[k].get<std::int64_t>() < 0 || ids[k].get<std::int64_t>() > kIntMax))
          throw fail(fmt::format("'prompt_ids'[{}] is {}: token ids are integers in [0, {:.0Lf}]",
                                 k, ids[k].dump(), kIntMax));
        r.prompt_ids.push_back(static_cast<int>(ids[k].get<std::int64_t>()));
      }
    }
    if (j.contains("tenant")) {
      if (!j["tenant"].is_string()) throw fail("'tenant' must be a string");
      r.tenant = j["tenant"].get<std::string>();
    }
    if (j.contains("parent")) {
      // Only an earlier line: a chat's turns come in order, and no chain can loop.
      const nlohmann::json& v = j["parent"];
      if (!v.is_number_integer())
        throw fail(
            fmt::format("'parent' {} must be an integer, the id of an earlier request", v.dump()));
      const bool earlier = v.is_number_unsigned()
                               ? v.get<std::uint64_t>() < static_cast<std::uint64_t>(r.id)
                               : v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() < r.id;
      if (!earlier)
        throw fail(fmt::format(
            "'parent' {} is not an earlier request: this is request {} "
            "(requests are numbered by line from 0){}",
            v.dump(), r.id, r.id == 0 ? ", the first" : fmt::format(", so 0 to {}", r.id - 1)));
      r.parent = static_cast<int>(v.get<std::int64_t>());
    }
    if (j.contains("think_time")) {
      if (r.parent < 0) throw fail("'think_time' applies only with 'parent'");
      get_real("think_time", r.think_time);
      if (!(r.think_time >= 0 && r.think_time <= kMaxArrivalSeconds))
        throw fail(fmt::format("'think_time' {} is outside [0, {:g}] seconds",
                               j["think_time"].dump(), kMaxArrivalSeconds));
    }
    SamplingParams& s = r.sampling;
    get_real("temperature", s.temperature);
    get_integer("top_k", s.top_k, 0, kIntMax);
    get_real("top_p", s.top_p);
    get_real("min_p", s.min_p);
    get_real("repetition_penalty", s.repetition_penalty);
    get_real("frequency_penalty", s.frequency_penalty);
    get_real("presence_penalty", s.presence_penalty);
    get_integer("seed", s.seed, 0,
                static_cast<long double>(std::numeric_limits<std::uint64_t>::max()));
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
  if (out.empty()) throw Error(fmt::format("{}: no request in the workload file", source));
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  return out;
}

std::vector<Request> load_workload_file(const std::string& path, const SamplingParams& defaults) {
  std::ifstream in = open_regular_file(path, "workload file");
  return read_workload_file(in, path, defaults);
}

}  // namespace inferlab
