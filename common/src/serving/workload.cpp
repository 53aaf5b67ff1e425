// Workloads: a seeded generator (the arrivals and lengths every kind shares, then one prompt
// generator per WorkloadKind) and a JSONL workload-file reader.
#include "inferlab/serving/workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
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

std::string percent(std::int64_t part, std::int64_t whole) {
  return fmt::format("{:.0f}%", 100.0 * double(part) / double(whole));
}

// The generator's random streams, each drawn from for one purpose only, so that changing one
// distribution leaves the others' draws alone.
struct Streams {
  explicit Streams(std::uint64_t seed)
      : arrivals(seed * 3 + 1),
        prompts(seed * 3 + 2),
        outputs(seed * 3 + 3),
        content(stream_seed(seed, 1)),
        choices(stream_seed(seed, 2)),
        thinking(stream_seed(seed, 3)) {}
  Rng arrivals;  // gaps between arrivals
  Rng prompts;   // lengths of the requests' own prompt parts
  Rng outputs;   // output lengths
  Rng content;   // prompt token ids
  Rng choices;   // which prefix, task or documents a request takes
  Rng thinking;  // multi-turn think times
};

// One workload kind: its parameters, the material its requests share, and each request's
// prompt. generate_workload() draws the arrival and lengths every kind shares, then asks the
// kind for the prompt.
class PromptGenerator {
 public:
  explicit PromptGenerator(const WorkloadSpec& spec) : spec_(spec) {}
  virtual ~PromptGenerator() = default;
  // @throws Error naming the kind for a parameter outside its range.
  virtual void check() const {}
  // The most prompt ids one request may hold (its own part at its cap included).
  virtual double max_ids_per_request() const { return double(spec_.prefix_len) + spec_.max_prompt; }
  // Draws what the requests share (prefixes, examples, documents, the system prompt).
  virtual void draw_shared(Streams& streams) { (void)streams; }
  // False when the kind draws its own arrival gaps (multi-turn: one per conversation).
  virtual bool poisson_per_request() const { return true; }
  // Gives @p r its prompt, whose own part is @p own tokens long; @p t is the arrival clock.
  virtual void make_prompt(Request& r, int own, double& t, Streams& streams) = 0;
  // What was generated, with realised numbers (WorkloadSpec's `shape`).
  virtual std::string shape() const = 0;

 protected:
  // The range checks shared-prefix and few-shot share: prefixes of at least @p min_len tokens.
  void check_prefixes(int min_len) const;
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("workload {}: {}", workload_kind_name(spec_.kind), what));
  }
  static constexpr int kMaxPoolTokens = 1 << 20;  // one prefix, example set or document
  const WorkloadSpec& spec_;
};

void PromptGenerator::check_prefixes(int min_len) const {
  if (spec_.prefixes < 1 || spec_.prefixes > 10000)
    fail(fmt::format("prefixes {} is outside [1, 10000]", spec_.prefixes));
  if (spec_.prefix_len < min_len || spec_.prefix_len > kMaxPoolTokens)
    fail(fmt::format("prefix length {} is outside [{}, {}]", spec_.prefix_len, min_len,
                     kMaxPoolTokens));
  if (!(spec_.shared_fraction >= 0.0 && spec_.shared_fraction <= 1.0))  // NaN fails too
    fail(fmt::format("shared fraction {} is outside [0, 1]", spec_.shared_fraction));
  require_allocation(double(spec_.prefixes) * spec_.prefix_len * sizeof(int),
                     fmt::format("{} prefixes of {} tokens", spec_.prefixes, spec_.prefix_len));
}

// random: prompts given by length only, nothing shared.
class RandomPrompts final : public PromptGenerator {
 public:
  using PromptGenerator::PromptGenerator;
  double max_ids_per_request() const override { return 0.0; }
  void make_prompt(Request& r, int own, double& t, Streams& streams) override {
    (void)t, (void)streams;
    r.prompt_len = own;
  }
  std::string shape() const override { return "random prompts"; }
};

// shared-prefix: a fraction of the requests start with one of K common prefixes.
class SharedPrefixPrompts final : public PromptGenerator {
 public:
  using PromptGenerator::PromptGenerator;
  void check() const override { check_prefixes(1); }
  void draw_shared(Streams& streams) override {
    for (int k = 0; k < spec_.prefixes; ++k)
      prefixes_.push_back(random_tokens(spec_.prefix_len, streams.content));
  }
  void make_prompt(Request& r, int own, double& t, Streams& streams) override {
    (void)t;
    if (static_cast<double>(streams.choices.next_f32()) < spec_.shared_fraction) {
      r.prompt_ids = prefixes_[uniform_index(streams.choices, spec_.prefixes)];
      ++shared_;
    }
    // A request without a prefix gets a unique prompt of the same total length.
    append_tokens(r.prompt_ids, r.prompt_ids.empty() ? spec_.prefix_len + own : own,
                  streams.content);
  }
  std::string shape() const override {
    const std::int64_t n = spec_.requests;
    return fmt::format(
        "shared-prefix: {} of {} requests ({}) start with one of {} prefixes "
        "of {} tokens (chosen uniformly), the rest with a unique prompt of "
        "the same length",
        shared_, n, percent(shared_, n), spec_.prefixes, spec_.prefix_len);
  }

 private:
  std::vector<std::vector<int>> prefixes_;
  std::int64_t shared_ = 0;  // requests that took a prefix
};

// few-shot: one instruction + one of K tasks' examples + a unique question.
class FewShotPrompts final : public PromptGenerator {
 public:
  using PromptGenerator::PromptGenerator;
  void check() const override { check_prefixes(2); }  // instruction + examples
  void draw_shared(Streams& streams) override {
    instruction_ = random_tokens(spec_.prefix_len / 3, streams.content);
    for (int k = 0; k < spec_.prefixes; ++k)
      examples_.push_back(random_tokens(spec_.prefix_len - spec_.prefix_len / 3, streams.content));
    uses_.assign(examples_.size(), 0);
  }
  void make_prompt(Request& r, int own, double& t, Streams& streams) override {
    (void)t;
    const int k = uniform_index(streams.choices, spec_.prefixes);
    r.prompt_ids = instruction_;
    r.prompt_ids.insert(r.prompt_ids.end(), examples_[k].begin(), examples_[k].end());
    append_tokens(r.prompt_ids, own, streams.content);
    ++uses_[k];
  }
  std::string shape() const override {
    return fmt::format(
        "few-shot: every prompt is one instruction of {} tokens + the "
        "examples of one of {} tasks ({} tokens; the busiest task has {} "
        "requests) + a unique question",
        instruction_.size(), spec_.prefixes, examples_.front().size(),
        *std::max_element(uses_.begin(), uses_.end()));
  }

 private:
  std::vector<int> instruction_;
  std::vector<std::vector<int>> examples_;  // one set per task
  std::vector<std::int64_t> uses_;          // requests per task
};

// multi-turn: chats in which every turn resends the conversation so far plus a new message.
class MultiTurnPrompts final : public PromptGenerator {
 public:
  using PromptGenerator::PromptGenerator;
  void check() const override {
    if (spec_.prefix_len < 0 || spec_.prefix_len > kMaxPoolTokens)
      fail(fmt::format("system prompt length {} is outside [0, {}]", spec_.prefix_len,
                       kMaxPoolTokens));
    if (spec_.turns < 1) fail(fmt::format("turns {} must be >= 1", spec_.turns));
    if (!(std::isfinite(spec_.think_time) && spec_.think_time >= 0.0))
      fail(fmt::format("think time {} must be finite and >= 0", spec_.think_time));
    // BOS + the system prompt + the shortest turn (a 1-token message, 1 output token).
    if (std::int64_t{spec_.prefix_len} + 3 > spec_.max_conversation)
      fail(
          fmt::format("a system prompt of {} tokens leaves no room for a turn in a "
                      "conversation of at most {} tokens",
                      spec_.prefix_len, spec_.max_conversation));
  }
  void draw_shared(Streams& streams) override {
    system_ = random_tokens(spec_.prefix_len, streams.content);
  }
  bool poisson_per_request() const override { return false; }
  void make_prompt(Request& r, int own, double& t, Streams& streams) override {
    const std::int64_t cost = std::int64_t{own} + r.max_tokens;
    const bool fits = conversation_tokens_ + cost <= spec_.max_conversation;
    if (turn_ > 0 && turn_ < spec_.turns && !fits) ++ended_early_;
    if (turn_ == 0 || turn_ == spec_.turns || !fits) {
      // A new conversation: it starts by the Poisson process.
      if (spec_.rate > 0.0 && r.id > 0) t += -std::log(open_unit(streams.arrivals)) / spec_.rate;
      turn_ = 0;
      conversation_tokens_ = 1 + std::int64_t{spec_.prefix_len};
      turns_of_.push_back(0);
    }
    ++turn_;
    ++turns_of_.back();
    conversation_tokens_ += cost;
    r.tenant = tenant_name(spec_, static_cast<int>(turns_of_.size() - 1));
    if (turn_ == 1) {
      r.arrival = spec_.rate > 0.0 ? t : 0.0;
      r.prompt_ids = system_;
    } else {
      r.parent = r.id - 1;
      r.arrival = 0.0;  // the engine schedules it think_time after its parent finishes
      r.think_time = exponential(streams.thinking, spec_.think_time);
    }
    append_tokens(r.prompt_ids, own, streams.content);
  }
  std::string shape() const override {
    const std::int64_t conversations = static_cast<std::int64_t>(turns_of_.size());
    return fmt::format(
        "multi-turn: {} conversations of {}-{} turns (mean {:.1f}, at most "
        "{}; {} ended early to stay within {} tokens), {}, think time "
        "exponential with mean {:g} s",
        conversations, *std::min_element(turns_of_.begin(), turns_of_.end()),
        *std::max_element(turns_of_.begin(), turns_of_.end()),
        double(spec_.requests) / double(conversations), spec_.turns, ended_early_,
        spec_.max_conversation,
        spec_.prefix_len > 0 ? fmt::format("a shared system prompt of {} tokens", spec_.prefix_len)
                             : std::string("no system prompt"),
        spec_.think_time);
  }

 private:
  std::vector<int> system_;               // the system prompt every conversation starts with
  int turn_ = 0;                          // turns of the conversation the next request may continue
  std::int64_t conversation_tokens_ = 0;  // its worst case: BOS + system + messages + outputs
  std::vector<int> turns_of_;             // turns of each conversation
  std::int64_t ended_early_ = 0;          // conversations ended to stay in max_conversation
};

// rag: 1-3 documents drawn from a pool by Zipf popularity + a unique question.
class RagPrompts final : public PromptGenerator {
 public:
  using PromptGenerator::PromptGenerator;
  void check() const override {
    if (spec_.docs < 1 || spec_.docs > 1'000'000)
      fail(fmt::format("documents {} is outside [1, 1000000]", spec_.docs));
    if (spec_.doc_len < 1 || spec_.doc_len > kMaxPoolTokens)
      fail(fmt::format("document length {} is outside [1, {}]", spec_.doc_len, kMaxPoolTokens));
    require_allocation(double(spec_.docs) * spec_.doc_len * sizeof(int),
                       fmt::format("{} documents of {} tokens", spec_.docs, spec_.doc_len));
  }
  double max_ids_per_request() const override { return 3.0 * spec_.doc_len + spec_.max_prompt; }
  void draw_shared(Streams& streams) override {
    double total = 0.0;
    for (int d = 0; d < spec_.docs; ++d) {
      docs_.push_back(random_tokens(spec_.doc_len, streams.content));
      total += std::pow(d + 1.0, -kRagZipfExponent);
      zipf_cdf_.push_back(total);
    }
    for (double& c : zipf_cdf_) c /= total;
    uses_.assign(docs_.size(), 0);
  }
  void make_prompt(Request& r, int own, double& t, Streams& streams) override {
    (void)t;
    const int want = std::min(1 + uniform_index(streams.choices, 3), spec_.docs);
    std::array<int, 3> picked{};
    for (int n = 0; n < want;) {
      // Drawing from the whole pool and redrawing repeats is drawing without replacement
      // in proportion to the popularity of the documents left.
      const double u = static_cast<double>(streams.choices.next_f32());
      const int d = static_cast<int>(std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end() - 1, u) -
                                     zipf_cdf_.begin());
      if (std::find(picked.begin(), picked.begin() + n, d) != picked.begin() + n) continue;
      picked[static_cast<std::size_t>(n++)] = d;
      r.prompt_ids.insert(r.prompt_ids.end(), docs_[d].begin(), docs_[d].end());
      ++uses_[d];
    }
    docs_cited_ += want;
    append_tokens(r.prompt_ids, own, streams.content);
  }
  std::string shape() const override {
    const std::int64_t n = spec_.requests;
    return fmt::format(
        "rag: each prompt holds 1-3 documents (mean {:.2f}) of a pool of {} "
        "of {} tokens, Zipf popularity with exponent {:g} (the most popular "
        "is in {} of the prompts), + a unique question",
        double(docs_cited_) / double(n), spec_.docs, spec_.doc_len, kRagZipfExponent,
        percent(*std::max_element(uses_.begin(), uses_.end()), n));
  }

 private:
  std::vector<std::vector<int>> docs_;  // the pool
  std::vector<double> zipf_cdf_;        // cumulative popularity of documents 0..D-1
  std::vector<std::int64_t> uses_;      // prompts citing each document
  std::int64_t docs_cited_ = 0;         // documents over all prompts
};

std::unique_ptr<PromptGenerator> make_prompt_generator(const WorkloadSpec& spec) {
  switch (spec.kind) {
    case WorkloadKind::random:
      return std::make_unique<RandomPrompts>(spec);
    case WorkloadKind::shared_prefix:
      return std::make_unique<SharedPrefixPrompts>(spec);
    case WorkloadKind::few_shot:
      return std::make_unique<FewShotPrompts>(spec);
    case WorkloadKind::multi_turn:
      return std::make_unique<MultiTurnPrompts>(spec);
    case WorkloadKind::rag:
      return std::make_unique<RagPrompts>(spec);
  }
  throw Error("unknown workload kind");
}

}  // namespace

std::vector<Request> generate_workload(const WorkloadSpec& spec, std::string* shape) {
  if (spec.requests < 1 || spec.requests > kMaxRequests)
    throw Error(fmt::format("requests {} is outside [1, {}]", spec.requests, kMaxRequests));
  if (spec.max_prompt < 1 || spec.max_output < 1)
    throw Error("workload caps on prompt and output lengths must be >= 1");
  if (!(std::isfinite(spec.rate) && spec.rate >= 0.0))
    throw Error(fmt::format("arrival rate {} must be finite and >= 0 (0: all at once)", spec.rate));
  if (spec.tenants < 1)
    throw Error(fmt::format("workload {}: tenants {} must be >= 1", workload_kind_name(spec.kind),
                            spec.tenants));
  const std::unique_ptr<PromptGenerator> prompts = make_prompt_generator(spec);
  prompts->check();
  require_allocation(
      double(spec.requests) * (sizeof(Request) + prompts->max_ids_per_request() * sizeof(int)),
      fmt::format("a workload of {} requests", spec.requests));
  Streams streams(spec.seed);
  prompts->draw_shared(streams);

  std::vector<Request> out;
  double t = 0.0;
  for (int i = 0; i < spec.requests; ++i) {
    Request r;
    r.id = i;
    // Draw order: arrival, own prompt length, output length, then the kind's own draws.
    if (spec.rate > 0.0 && i > 0 && prompts->poisson_per_request())
      t += -std::log(open_unit(streams.arrivals)) / spec.rate;
    r.arrival = spec.rate > 0.0 ? t : 0.0;
    const int own = clamp_length(spec.prompt.sample(streams.prompts), spec.max_prompt);
    r.max_tokens = clamp_length(spec.output.sample(streams.outputs), spec.max_output);
    if (spec.max_tokens > 0) {
      r.output_len = std::min(r.max_tokens, spec.max_tokens);
      r.max_tokens = spec.max_tokens;
    }
    r.sampling = spec.sampling;
    r.sampling.seed = spec.sampling.seed + static_cast<std::uint64_t>(i);
    r.ignore_eos = true;
    r.tenant = tenant_name(spec, i);
    prompts->make_prompt(r, own, t, streams);
    out.push_back(std::move(r));
  }
  if (t > kMaxArrivalSeconds) {
    throw Error(
        fmt::format("at a rate of {:g}/s the last of {} requests arrives at {:.3g} s, after "
                    "the limit of {:g} s: raise the rate or lower the requests",
                    spec.rate, spec.requests, t, kMaxArrivalSeconds));
  }
  if (shape) {
    *shape = prompts->shape();
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
