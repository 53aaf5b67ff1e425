// The workload generator (determinism, distribution means, the shared-prefix kinds' sharing)
// and the JSONL workload-file reader (its fields and its line-numbered errors).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/workload.hpp"

using namespace inferlab;

namespace {

double sample_mean(const LengthDistribution& d, int n, std::uint64_t seed) {
  Rng rng(seed);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += d.sample(rng);
  return sum / n;
}

std::string error_of(const std::string& jsonl) {
  std::istringstream in(jsonl);
  try {
    read_workload_file(in, "t.jsonl");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("workload: the same seed gives the same workload, another seed another",
          "[unit][workload]") {
  WorkloadSpec spec;
  spec.requests = 50;
  spec.rate = 4.0;
  spec.seed = 7;
  const auto a = generate_workload(spec), b = generate_workload(spec);
  REQUIRE(a.size() == 50);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].id == static_cast<int>(i));
    CHECK(a[i].arrival == b[i].arrival);
    CHECK(a[i].prompt_len == b[i].prompt_len);
    CHECK(a[i].max_tokens == b[i].max_tokens);
    CHECK(a[i].ignore_eos);
    CHECK(a[i].sampling.seed == spec.sampling.seed + i);
    if (i > 0) CHECK(a[i].arrival >= a[i - 1].arrival);
    CHECK(a[i].prompt_len >= 1);
    CHECK(a[i].prompt_len <= spec.max_prompt);
  }
  spec.seed = 8;
  const auto c = generate_workload(spec);
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].max_tokens == c[i].max_tokens;
  CHECK(same < 25);
}

TEST_CASE("workload: Poisson arrivals have mean gap 1 / rate, and rate 0 means all at once",
          "[unit][workload]") {
  WorkloadSpec spec;
  spec.requests = 20001;
  spec.rate = 5.0;
  const auto w = generate_workload(spec);
  const double mean_gap = w.back().arrival / 20000.0;
  CHECK(mean_gap == Approx(0.2).epsilon(0.03));
  spec.requests = 10;
  spec.rate = 0.0;
  for (const Request& r : generate_workload(spec)) CHECK(r.arrival == 0.0);
}

TEST_CASE("workload: length distributions have the means they promise", "[unit][workload]") {
  const int n = 200000;
  CHECK(sample_mean(parse_length_distribution("fixed:64"), 10, 1) == 64.0);
  CHECK(sample_mean(parse_length_distribution("uniform:10:30"), n, 2) ==
        Approx(20.0).epsilon(0.01));
  CHECK(sample_mean(parse_length_distribution("lognormal:128:0.8"), n, 3) ==
        Approx(128.0).epsilon(0.02));
  // Pareto with alpha 3 has a finite variance, so the sample mean settles.
  CHECK(sample_mean(parse_length_distribution("pareto:100:3"), n, 4) ==
        Approx(100.0).epsilon(0.02));
  // Its median is xm 2^(1/alpha) whatever the tail does: for mean 100, alpha 1.5, xm = 33.3.
  const LengthDistribution heavy = parse_length_distribution("pareto:100:1.5");
  Rng rng(5);
  std::vector<double> xs(n);
  for (double& x : xs) x = heavy.sample(rng);
  std::nth_element(xs.begin(), xs.begin() + n / 2, xs.end());
  CHECK(xs[n / 2] == Approx(100.0 / 3.0 * std::pow(2.0, 1.0 / 1.5)).epsilon(0.02));
  // Uniform stays inside its bounds.
  Rng r2(6);
  const LengthDistribution u = parse_length_distribution("uniform:3:5");
  for (int i = 0; i < 1000; ++i) {
    const double x = u.sample(r2);
    CHECK((x == 3 || x == 4 || x == 5));
  }
}

TEST_CASE("workload: distribution strings are parsed and checked", "[unit][workload]") {
  CHECK(parse_length_distribution("lognormal:50").describe() == "lognormal:50:0.8");
  CHECK(parse_length_distribution("pareto:40:2").describe() == "pareto:40:2");
  for (const char* bad : {"", "fixed", "fixed:x", "uniform:5:1", "uniform:0:3", "pareto:10:1",
                          "lognormal:-1", "gauss:3", "fixed:1:2"})
    CHECK_THROWS_AS(parse_length_distribution(bad), Error);
}

TEST_CASE("workload file: JSONL lines become requests, sorted by arrival", "[unit][workload]") {
  std::istringstream in(
      "{\"arrival\": 0.5, \"prompt\": \"Once upon a time\", \"max_tokens\": 64}\n"
      "\n"
      "# a comment\n"
      "{\"arrival\": 0.25, \"prompt_len\": 300, \"max_tokens\": 8, \"temperature\": 0,"
      " \"top_k\": 5, \"seed\": 99, \"ignore_eos\": true}\n");
  SamplingParams defaults;
  defaults.temperature = 0.7f;
  defaults.seed = 10;
  const auto reqs = read_workload_file(in, "t.jsonl", defaults);
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].id == 1);  // numbered in line order, sorted by arrival
  CHECK(reqs[0].arrival == 0.25);
  CHECK(reqs[0].prompt_len == 300);
  CHECK(reqs[0].sampling.temperature == 0.0f);
  CHECK(reqs[0].sampling.top_k == 5);
  CHECK(reqs[0].sampling.seed == 99);
  CHECK(reqs[0].ignore_eos);
  CHECK(reqs[1].id == 0);
  CHECK(reqs[1].prompt == "Once upon a time");
  CHECK(reqs[1].max_tokens == 64);
  CHECK(reqs[1].sampling.temperature == 0.7f);
  CHECK(reqs[1].sampling.seed == 10);  // defaults.seed + id
  CHECK_FALSE(reqs[1].ignore_eos);
}

TEST_CASE("workload file: a bad line is reported with its line number", "[unit][workload]") {
  const std::string good = "{\"prompt\": \"Hi\", \"max_tokens\": 4}\n";
  CHECK_THAT(error_of(good + "{not json\n"), Catch::Contains("t.jsonl:2:"));
  CHECK_THAT(error_of(good + good + "\n{\"prompt\": \"Hi\"}\n"),
             Catch::Contains("t.jsonl:4:") && Catch::Contains("max_tokens"));
  CHECK_THAT(error_of("{\"prompt\": \"Hi\", \"prompt_len\": 3, \"max_tokens\": 4}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("exactly one"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"temprature\": 1}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("temprature"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"min_p\": 2}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("min_p"));
  CHECK_THAT(error_of("{\"prompt\": \"Hi\", \"max_tokens\": 0}"), Catch::Contains("t.jsonl:1:"));
  CHECK_THAT(error_of("{\"prompt\": \"Hi\", \"max_tokens\": 2, \"arrival\": -1}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("arrival"));
  CHECK_THAT(error_of("{\"prompt\": 5, \"max_tokens\": 2}"), Catch::Contains("t.jsonl:1:"));
  CHECK_THAT(error_of("[1, 2]"), Catch::Contains("t.jsonl:1:"));
  CHECK_THAT(error_of("\n"), Catch::Contains("no request"));
  CHECK_THROWS_AS(load_workload_file("/nonexistent/workload.jsonl"), Error);
}

// --- workloads that share prompt prefixes (chapter 06) ---

namespace {

WorkloadSpec kind_spec(WorkloadKind kind, int requests, std::uint64_t seed) {
  WorkloadSpec spec;
  spec.kind = kind;
  spec.requests = requests;
  spec.rate = 10.0;
  spec.seed = seed;
  return spec;
}

bool starts_with(const std::vector<int>& ids, const std::vector<int>& prefix) {
  return ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

// Length of the common prefix of two prompts.
std::size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

bool ids_in_workload_range(const std::vector<int>& ids) {
  for (int id : ids)
    if (id < kFirstWorkloadToken || id >= kWorkloadVocab) return false;
  return true;
}

std::string generate_error(const WorkloadSpec& spec) {
  try {
    generate_workload(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("workload: random with seed 1 draws its golden requests",
          "[unit][workload]") {
  // Golden values of the random kind's first six requests (arrival, prompt_len, max_tokens,
  // output_len): a generator change that moves them moves every serving chapter's numbers.
  struct Row {
    double arrival;
    int prompt_len, max_tokens, output_len;
  };
  WorkloadSpec spec;
  spec.requests = 6;
  spec.rate = 40.0;
  spec.seed = 1;
  const Row a[] = {{0, 54, 403, 0},
                   {0.0078314538937362781, 39, 252, 0},
                   {0.037510272111386293, 72, 33, 0},
                   {0.054022624711058106, 88, 99, 0},
                   {0.066129878438373285, 166, 79, 0},
                   {0.09317536316689394, 146, 79, 0}};
  std::string shape;
  auto w = generate_workload(spec, &shape);
  CHECK(shape == "random prompts");
  REQUIRE(w.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(w[i].arrival == a[i].arrival);
    CHECK(w[i].prompt_len == a[i].prompt_len);
    CHECK(w[i].max_tokens == a[i].max_tokens);
    CHECK(w[i].output_len == a[i].output_len);
    CHECK(w[i].prompt_ids.empty());
    CHECK(w[i].tenant.empty());
    CHECK(w[i].parent == -1);
  }
  spec.seed = 12345;
  spec.max_tokens = 200;
  spec.prompt = parse_length_distribution("pareto:100:1.5");
  const Row b[] = {{0, 40, 200, 120},
                   {0.0068139641835038584, 35, 200, 115},
                   {0.011785112747657572, 94, 200, 89},
                   {0.041151408269484407, 65, 200, 88},
                   {0.063376086994447509, 81, 200, 31},
                   {0.080446848150433209, 52, 200, 113}};
  w = generate_workload(spec);
  for (int i = 0; i < 6; ++i) {
    CHECK(w[i].arrival == b[i].arrival);
    CHECK(w[i].prompt_len == b[i].prompt_len);
    CHECK(w[i].max_tokens == b[i].max_tokens);
    CHECK(w[i].output_len == b[i].output_len);
  }
}

TEST_CASE("workload: names of the kinds are parsed, an unknown one lists the choices",
          "[unit][workload]") {
  for (WorkloadKind k : {WorkloadKind::random, WorkloadKind::shared_prefix, WorkloadKind::few_shot,
                         WorkloadKind::multi_turn, WorkloadKind::rag})
    CHECK(parse_workload_kind(workload_kind_name(k)) == k);
  CHECK(std::string(workload_kind_name(WorkloadKind::shared_prefix)) == "shared-prefix");
  try {
    parse_workload_kind("shared_prefix");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("shared_prefix") && Catch::Contains("shared-prefix") &&
                             Catch::Contains("few-shot") && Catch::Contains("multi-turn") &&
                             Catch::Contains("rag") && Catch::Contains("random"));
  }
}

TEST_CASE("workload: every kind is deterministic in its seed, with ids in the shared range",
          "[unit][workload]") {
  for (WorkloadKind k : {WorkloadKind::shared_prefix, WorkloadKind::few_shot,
                         WorkloadKind::multi_turn, WorkloadKind::rag}) {
    INFO(workload_kind_name(k));
    WorkloadSpec spec = kind_spec(k, 60, 3);
    spec.tenants = 3;
    std::string shape_a, shape_b;
    const auto a = generate_workload(spec, &shape_a), b = generate_workload(spec, &shape_b);
    CHECK(shape_a == shape_b);
    CHECK_THAT(shape_a, Catch::StartsWith(workload_kind_name(k)));
    REQUIRE(a.size() == 60);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].id == static_cast<int>(i));
      CHECK(a[i].prompt_ids == b[i].prompt_ids);
      CHECK(a[i].arrival == b[i].arrival);
      CHECK(a[i].max_tokens == b[i].max_tokens);
      CHECK(a[i].parent == b[i].parent);
      CHECK(a[i].think_time == b[i].think_time);
      CHECK(a[i].tenant == b[i].tenant);
      CHECK(a[i].prompt_len == 0);
      CHECK_FALSE(a[i].prompt_ids.empty());
      CHECK(ids_in_workload_range(a[i].prompt_ids));
      CHECK((a[i].tenant == "t0" || a[i].tenant == "t1" || a[i].tenant == "t2"));
    }
    spec.seed = 4;
    const auto c = generate_workload(spec);
    int same = 0;
    for (std::size_t i = 0; i < a.size(); ++i) same += a[i].prompt_ids == c[i].prompt_ids;
    CHECK(same == 0);
  }
}

TEST_CASE("workload: shared-prefix shares one of K prefixes with the fraction asked for",
          "[unit][workload]") {
  WorkloadSpec spec = kind_spec(WorkloadKind::shared_prefix, 4000, 11);
  spec.prefixes = 5;
  spec.prefix_len = 40;
  spec.shared_fraction = 0.6;
  std::string shape;
  const auto w = generate_workload(spec, &shape);
  // The prefixes are the 40-token prompt starts that several requests have in common; a unique
  // prompt repeats another's first 40 ids with probability 509^-40, never.
  std::map<std::vector<int>, int> starts;
  for (const Request& r : w)
    ++starts[std::vector<int>(r.prompt_ids.begin(), r.prompt_ids.begin() + 40)];
  std::vector<std::vector<int>> prefixes;
  int shared = 0;
  for (const auto& [start, count] : starts) {
    if (count < 2) continue;
    prefixes.push_back(start);
    shared += count;
  }
  REQUIRE(prefixes.size() == 5);
  // Binomial(4000, 0.6): standard deviation sqrt(4000 * 0.6 * 0.4) = 31; 4 sigma = 124.
  CHECK(std::abs(shared - 2400) <= 124);
  CHECK_THAT(shape, Catch::Contains(fmt::format("{} of 4000 requests", shared)) &&
                        Catch::Contains("5 prefixes of 40 tokens"));
  // Each prefix about equally often (uniform choice): Binomial(n_shared, 1/5), 4 sigma.
  for (const auto& p : prefixes) {
    const double expected = shared / 5.0, sd = std::sqrt(shared * 0.2 * 0.8);
    CHECK(std::abs(starts[p] - expected) <= 4 * sd);
  }
  // Shared or not, the prompt lengths follow the same distribution: 40 + the own part, which
  // comes from the same stream as the random kind's prompt lengths (the same for one seed).
  WorkloadSpec plain = spec;
  plain.kind = WorkloadKind::random;
  const auto lengths = generate_workload(plain);
  for (std::size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].prompt_ids.size() == 40u + static_cast<std::size_t>(lengths[i].prompt_len));
    CHECK(w[i].arrival == lengths[i].arrival);
    CHECK(w[i].max_tokens == lengths[i].max_tokens);
  }
  // The suffixes after a prefix are the requests' own: two requests sharing a prefix do not
  // share the next 8 tokens (chance 509^-8 per pair of this seed's requests).
  int suffix_clashes = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i].prompt_ids.size() >= 48 && w[i + 1].prompt_ids.size() >= 48 &&
        common_prefix(w[i].prompt_ids, w[i + 1].prompt_ids) >= 48)
      ++suffix_clashes;
  CHECK(suffix_clashes == 0);
  // Fractions 0 and 1 are exact.
  spec.requests = 200;
  spec.shared_fraction = 0.0;
  std::set<int> firsts;
  for (const Request& r : generate_workload(spec)) firsts.insert(r.prompt_ids[0]);
  CHECK(firsts.size() > 100);  // 200 random first ids out of 509: about 165 distinct
  spec.shared_fraction = 1.0;
  std::set<std::vector<int>> starts_all;
  for (const Request& r : generate_workload(spec))
    starts_all.insert(std::vector<int>(r.prompt_ids.begin(), r.prompt_ids.begin() + 40));
  CHECK(starts_all.size() == 5);
}

TEST_CASE("workload: few-shot prompts share the instruction, same-task prompts the examples too",
          "[unit][workload]") {
  WorkloadSpec spec = kind_spec(WorkloadKind::few_shot, 300, 5);
  spec.prefixes = 4;
  spec.prefix_len = 128;  // instruction 42 tokens (128 / 3), examples 86
  std::string shape;
  const auto w = generate_workload(spec, &shape);
  CHECK_THAT(shape, Catch::Contains("instruction of 42 tokens") && Catch::Contains("4 tasks") &&
                        Catch::Contains("86 tokens"));
  const std::vector<int> instruction(w[0].prompt_ids.begin(), w[0].prompt_ids.begin() + 42);
  std::map<std::vector<int>, int> tasks;
  for (const Request& r : w) {
    REQUIRE(r.prompt_ids.size() > 128);
    CHECK(starts_with(r.prompt_ids, instruction));
    ++tasks[std::vector<int>(r.prompt_ids.begin() + 42, r.prompt_ids.begin() + 128)];
  }
  CHECK(tasks.size() == 4);
  for (const auto& [examples, count] : tasks) CHECK(count > 40);  // Binomial(300, 1/4): 75 +- 7.5
  // The tree: two requests share exactly the instruction (42) or exactly instruction + examples
  // (128), up to a chance match of the next id (1/509 each).
  int shallow = 0, deep = 0, other = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    for (std::size_t j = i + 1; j < std::min(w.size(), i + 20); ++j) {
      const std::size_t n = common_prefix(w[i].prompt_ids, w[j].prompt_ids);
      if (n == 42 || n == 43)
        ++shallow;
      else if (n == 128 || n == 129)
        ++deep;
      else
        ++other;
    }
  }
  CHECK(other == 0);
  CHECK(shallow > 0);
  CHECK(deep > 0);
}

TEST_CASE("workload: multi-turn conversations are parent chains that fit their budget",
          "[unit][workload]") {
  WorkloadSpec spec = kind_spec(WorkloadKind::multi_turn, 400, 9);
  spec.turns = 4;
  spec.prefix_len = 32;
  spec.think_time = 2.0;
  spec.prompt = parse_length_distribution("uniform:10:40");
  spec.output = parse_length_distribution("uniform:10:60");
  spec.max_conversation = 512;
  std::string shape;
  const auto w = generate_workload(spec, &shape);
  REQUIRE(w.size() == 400);
  const std::vector<int> system(w[0].prompt_ids.begin(), w[0].prompt_ids.begin() + 32);
  std::vector<std::int64_t> worst(w.size());  // worst-case prompt of each request, BOS included
  std::vector<int> turn(w.size());
  int conversations = 0, full = 0;
  double think_sum = 0.0, last_start = -1.0;
  int thinks = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const Request& r = w[i];
    CHECK(r.ignore_eos);
    if (r.parent < 0) {
      ++conversations;
      turn[i] = 1;
      CHECK(starts_with(r.prompt_ids, system));  // the shared system prompt
      CHECK(r.think_time == 0.0);
      CHECK(r.arrival > last_start);  // conversations start in Poisson order
      last_start = r.arrival;
      worst[i] = 1 + static_cast<std::int64_t>(r.prompt_ids.size());
      CHECK(r.tenant.empty());
    } else {
      // A turn continues the request just before it: the previous turn of its conversation.
      CHECK(r.parent == static_cast<int>(i) - 1);
      CHECK(r.arrival == 0.0);
      CHECK(r.think_time > 0.0);
      think_sum += r.think_time;
      ++thinks;
      turn[i] = turn[i - 1] + 1;
      CHECK(turn[i] <= 4);
      CHECK_FALSE(starts_with(r.prompt_ids, system));  // only the new message
      CHECK(r.prompt_ids.size() >= 10u);
      CHECK(r.prompt_ids.size() <= 40u);
      worst[i] =
          worst[i - 1] + w[i - 1].max_tokens + static_cast<std::int64_t>(r.prompt_ids.size());
      // The whole conversation, with this turn's output, within the budget.
      CHECK(worst[i] + r.max_tokens <= 512);
    }
    if (turn[i] == 4) ++full;
  }
  // Messages up to 40 and outputs up to 60: at most 1 + 32 + 4 * 100 = 433 tokens, so every
  // conversation has its 4 turns (100 of them), but the last is cut short by the request count.
  CHECK(conversations == 100);
  CHECK(full == 100);
  CHECK_THAT(shape,
             Catch::Contains("100 conversations of 4-4 turns") && Catch::Contains("0 ended early"));
  // Exponential think times with mean 2: 300 of them, standard error 2 / sqrt(300) = 0.115.
  CHECK(std::abs(think_sum / thinks - 2.0) <= 4 * 0.115);

  // A budget that cannot hold 4 turns ends conversations early, and every chain still fits.
  spec.max_conversation = 250;
  const auto tight = generate_workload(spec, &shape);
  std::int64_t so_far = 0;
  int ended_early = 0, turns = 0;
  for (std::size_t i = 0; i < tight.size(); ++i) {
    const Request& r = tight[i];
    const std::int64_t cost =
        (r.parent < 0 ? 1 : 0) + static_cast<std::int64_t>(r.prompt_ids.size()) + r.max_tokens;
    if (r.parent < 0) {
      if (i > 0 && turns < 4) ++ended_early;
      so_far = cost;
      turns = 1;
    } else {
      so_far += cost;
      ++turns;
      CHECK(so_far <= 250);
    }
  }
  CHECK(ended_early > 0);
  CHECK_THAT(shape, Catch::Contains(fmt::format("{} ended early", ended_early)));
}

TEST_CASE("workload: rag prompts hold 1-3 distinct documents, popular ones more often",
          "[unit][workload]") {
  WorkloadSpec spec = kind_spec(WorkloadKind::rag, 3000, 21);
  spec.docs = 8;
  spec.doc_len = 20;
  spec.prompt = parse_length_distribution("fixed:7");  // the question: the last 7 ids
  std::string shape;
  const auto w = generate_workload(spec, &shape);
  std::map<std::vector<int>, int> cited;
  std::array<int, 4> with_k{};
  for (const Request& r : w) {
    const std::size_t docs_tokens = r.prompt_ids.size() - 7;
    REQUIRE(docs_tokens % 20 == 0);
    const std::size_t k = docs_tokens / 20;
    REQUIRE(k >= 1);
    REQUIRE(k <= 3);
    ++with_k[k];
    std::set<std::vector<int>> mine;
    for (std::size_t d = 0; d < k; ++d) {
      std::vector<int> doc(r.prompt_ids.begin() + d * 20, r.prompt_ids.begin() + (d + 1) * 20);
      ++cited[doc];
      mine.insert(doc);
    }
    CHECK(mine.size() == k);  // distinct
  }
  CHECK(cited.size() == 8);  // the pool
  // k uniform in {1, 2, 3}: Binomial(3000, 1/3), sd 25.8, 4 sigma.
  for (int k = 1; k <= 3; ++k) CHECK(std::abs(with_k[k] - 1000) <= 104);
  // Zipf: the most cited document is in far more prompts than the least cited.
  int most = 0, least = 1 << 30, total = 0;
  for (const auto& [doc, n] : cited) {
    most = std::max(most, n);
    least = std::min(least, n);
    total += n;
  }
  CHECK(most > 3 * least);
  CHECK(total == with_k[1] + 2 * with_k[2] + 3 * with_k[3]);
  CHECK_THAT(shape, Catch::Contains("pool of 8 of 20 tokens"));
  // With a pool of 2, a request that wants 3 gets both, never a repeat.
  spec.docs = 2;
  for (const Request& r : generate_workload(spec)) CHECK(r.prompt_ids.size() <= 2u * 20 + 7);
}

TEST_CASE("workload: parameters of the kinds are checked", "[unit][workload]") {
  WorkloadSpec spec = kind_spec(WorkloadKind::shared_prefix, 10, 1);
  spec.shared_fraction = 1.5;
  CHECK_THAT(generate_error(spec), Catch::Contains("shared fraction"));
  spec.shared_fraction = 0.5;
  spec.prefix_len = 0;
  CHECK_THAT(generate_error(spec), Catch::Contains("prefix length 0"));
  spec = kind_spec(WorkloadKind::few_shot, 10, 1);
  spec.prefix_len = 1;  // no room for both an instruction and examples
  CHECK_THAT(generate_error(spec), Catch::Contains("prefix length 1"));
  spec = kind_spec(WorkloadKind::multi_turn, 10, 1);
  spec.prefix_len = 600;  // the system prompt alone passes the budget of 512
  CHECK_THAT(generate_error(spec), Catch::Contains("no room"));
  spec.prefix_len = 0;
  spec.think_time = -1.0;
  CHECK_THAT(generate_error(spec), Catch::Contains("think time"));
  spec = kind_spec(WorkloadKind::rag, 10, 1);
  spec.docs = 0;
  CHECK_THAT(generate_error(spec), Catch::Contains("documents 0"));
  spec = kind_spec(WorkloadKind::random, 10, 1);
  spec.tenants = 0;
  CHECK_THAT(generate_error(spec), Catch::Contains("tenants"));
}

TEST_CASE("workload file: prompt_ids, tenant, parent and think_time are read", "[unit][workload]") {
  std::istringstream in(
      "{\"arrival\": 0.5, \"prompt_ids\": [3, 4, 511], \"max_tokens\": 8, \"tenant\": \"alice\"}\n"
      "{\"prompt\": \"and then?\", \"max_tokens\": 4, \"parent\": 0, \"think_time\": 1.5}\n"
      "{\"prompt_ids\": [7], \"max_tokens\": 2, \"parent\": 1}\n");
  const auto reqs = read_workload_file(in, "t.jsonl");
  REQUIRE(reqs.size() == 3);
  // Sorted by arrival: the continuations (arrival 0, scheduled after their parent) come first.
  CHECK(reqs[2].id == 0);
  CHECK(reqs[2].prompt_ids == std::vector<int>{3, 4, 511});
  CHECK(reqs[2].tenant == "alice");
  CHECK(reqs[2].parent == -1);
  CHECK(reqs[0].id == 1);
  CHECK(reqs[0].prompt == "and then?");
  CHECK(reqs[0].parent == 0);
  CHECK(reqs[0].think_time == 1.5);
  CHECK(reqs[0].tenant.empty());
  CHECK(reqs[1].id == 2);
  CHECK(reqs[1].parent == 1);
  CHECK(reqs[1].think_time == 0.0);
}

TEST_CASE("workload file: bad prompt_ids, empty prompts and bad parents are clear errors",
          "[unit][workload]") {
  const std::string good = "{\"prompt\": \"Hi\", \"max_tokens\": 4}\n";
  CHECK_THAT(error_of("{\"prompt\": \"\", \"max_tokens\": 4}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("'prompt' is empty"));
  CHECK_THAT(error_of("{\"prompt_ids\": [], \"max_tokens\": 4}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("'prompt_ids' is empty"));
  CHECK_THAT(error_of("{\"prompt_ids\": [3, -1], \"max_tokens\": 4}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("'prompt_ids'[1] is -1"));
  CHECK_THAT(error_of("{\"prompt_ids\": [2147483648], \"max_tokens\": 4}"),
             Catch::Contains("'prompt_ids'[0] is 2147483648"));
  CHECK_THAT(error_of("{\"prompt_ids\": [3, 4.5], \"max_tokens\": 4}"),
             Catch::Contains("'prompt_ids'[1] is 4.5"));
  CHECK_THAT(error_of("{\"prompt_ids\": [\"a\"], \"max_tokens\": 4}"),
             Catch::Contains("'prompt_ids'[0]"));
  CHECK_THAT(error_of("{\"prompt_ids\": 5, \"max_tokens\": 4}"),
             Catch::Contains("must be an array"));
  CHECK_THAT(error_of("{\"prompt_ids\": [5], \"prompt\": \"x\", \"max_tokens\": 4}"),
             Catch::Contains("exactly one of 'prompt' (text), 'prompt_len' and 'prompt_ids'"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": 1}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("not an earlier request") &&
                 Catch::Contains("so 0 to 0"));  // itself
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": 5}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("not an earlier request"));  // ahead
  CHECK_THAT(error_of("{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": 0}"),
             Catch::Contains("t.jsonl:1:") && Catch::Contains("the first"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": -1}"),
             Catch::Contains("not an earlier request"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": \"0\"}"),
             Catch::Contains("must be an integer"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"think_time\": 1}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("only with 'parent'"));
  CHECK_THAT(error_of(good + "{\"prompt\": \"Hi\", \"max_tokens\": 4, \"parent\": 0, "
                             "\"think_time\": -2}"),
             Catch::Contains("t.jsonl:2:") && Catch::Contains("'think_time' -2"));
  CHECK_THAT(error_of("{\"prompt\": \"Hi\", \"max_tokens\": 4, \"tenant\": 3}"),
             Catch::Contains("'tenant' must be a string"));
}

TEST_CASE("workload: conversations are checked against the context in the worst case",
          "[unit][workload]") {
  const Tokenizer tokenizer = Tokenizer::synthetic(512);
  ModelConfig served = named_config("stories260K");  // context 512, vocabulary 512
  REQUIRE(served.seq_len == 512);
  auto lengths_error = [&](const Workload& w, const ServingFlags& f) -> std::string {
    try {
      check_workload_lengths(w, f, tokenizer, served);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  ServingFlags from_file;
  from_file.workload_file = "chat.jsonl";
  auto file_workload = [](const std::string& jsonl) {
    std::istringstream in(jsonl);
    return Workload{read_workload_file(in, "chat.jsonl"), "workload file"};
  };
  // 1 + 3 prompt ids, max_tokens 200: the reply may make the conversation 204 tokens; the next
  // turn adds 100 ids (304 + 200 = 504), the third 9 more: 513 > 512. Line order != arrival order.
  const std::string ids100 = [] {
    std::string s = "[3";
    for (int i = 1; i < 100; ++i) s += ", 4";
    return s + "]";
  }();
  const std::string turn1 = "{\"arrival\": 1, \"prompt_ids\": [3, 4, 5], \"max_tokens\": 200}\n";
  const std::string turn2 =
      "{\"prompt_ids\": " + ids100 + ", \"max_tokens\": 200, \"parent\": 0, \"think_time\": 1}\n";
  CHECK(lengths_error(file_workload(turn1 + turn2), from_file) == "no error");
  CHECK(lengths_error(file_workload(turn1 + turn2 +
                                    "{\"prompt_ids\": [3, 3, 3, 3, 3, 3, 3, 3], \"max_tokens\": "
                                    "1, \"parent\": 1}\n"),
                      from_file) == "no error");  // 504 + 8 + BOS-free = 512: fits exactly
  CHECK_THAT(lengths_error(file_workload(turn1 + turn2 +
                                         "{\"prompt_ids\": [3, 3, 3, 3, 3, 3, 3, 3, 3], "
                                         "\"max_tokens\": 1, \"parent\": 1}\n"),
                           from_file),
             Catch::Contains("chat.jsonl: request 2: continuing request 1") &&
                 Catch::Contains("513 tokens") && Catch::Contains("context is 512"));
  // Ids outside the served vocabulary.
  CHECK_THAT(
      lengths_error(file_workload("{\"prompt_ids\": [3, 600], \"max_tokens\": 2}\n"), from_file),
      Catch::Contains("chat.jsonl: request 0: prompt token id 600 is outside"));
  // A generated conversation budget larger than the context: the error says which flag to lower.
  WorkloadSpec spec = kind_spec(WorkloadKind::multi_turn, 40, 2);
  spec.max_conversation = 4000;
  spec.prompt = parse_length_distribution("fixed:100");
  spec.output = parse_length_distribution("fixed:100");
  const Workload generated{generate_workload(spec), "generated"};
  CHECK_THAT(lengths_error(generated, ServingFlags{}),
             Catch::Contains("the generated workload: request") &&
                 Catch::Contains("lower --max-conversation to 512"));
  // Every generated kind with its defaults fits stories260K.
  for (WorkloadKind k : {WorkloadKind::shared_prefix, WorkloadKind::few_shot,
                         WorkloadKind::multi_turn, WorkloadKind::rag}) {
    WorkloadSpec d = kind_spec(k, 500, 1);
    d.max_output = 400;                   // as the serving flags' default
    if (k == WorkloadKind::multi_turn) {  // the serving flags' multi-turn length defaults
      ServingFlags f;
      d.prompt = parse_length_distribution(f.multi_turn_prompt_lens);
      d.output = parse_length_distribution(f.multi_turn_output_lens);
    }
    INFO(workload_kind_name(k));
    CHECK(lengths_error(Workload{generate_workload(d), ""}, ServingFlags{}) == "no error");
  }
}

TEST_CASE("serving flags: --workload and its kind's flags, checked and described",
          "[unit][workload]") {
  auto parse = [](std::vector<std::string> args, ServingFlags& f) -> std::string {
    CLI::App app;
    add_serving_flags(app, f);
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
      check_serving_flags(app, f);
    } catch (const CLI::ParseError& e) {
      return e.what();
    } catch (const Error& e) {
      return e.what();
    }
    return "ok";
  };
  ServingFlags f;
  CHECK_THAT(parse({"--workload", "chat"}, f),
             Catch::Contains("unknown workload 'chat'") && Catch::Contains("multi-turn"));
  f = {};
  CHECK_THAT(parse({"--turns", "3"}, f),
             Catch::Contains("--turns applies only to --workload multi-turn, not random"));
  f = {};
  CHECK_THAT(parse({"--workload", "rag", "--prefixes", "3"}, f),
             Catch::Contains("--prefixes applies only to --workload shared-prefix or few-shot"));
  f = {};
  CHECK_THAT(parse({"--workload", "shared-prefix", "--shared-fraction", "1.01"}, f),
             Catch::Contains("--shared-fraction"));
  f = {};
  CHECK_THAT(parse({"--workload", "few-shot", "--prefix-len", "1"}, f),
             Catch::Contains("--prefix-len 1 is too short for --workload few-shot"));
  f = {};
  CHECK_THAT(parse({"--workload-file", "x.jsonl", "--docs", "3"}, f),
             Catch::Contains("--docs describes a generated workload"));
  f = {};
  REQUIRE(parse({"--clock", "sim", "--workload", "shared-prefix", "--requests", "200", "--prefixes",
                 "4", "--prefix-len", "64", "--shared-fraction", "0.5", "--tenants", "2"},
                f) == "ok");
  const Workload w = make_workload(f, SamplingParams{});
  CHECK(w.requests.size() == 200);
  CHECK_THAT(w.description, Catch::StartsWith("200 requests, shared-prefix: ") &&
                                Catch::Contains("one of 4 prefixes of 64 tokens") &&
                                Catch::Contains("2 tenants") &&
                                Catch::Contains("Poisson arrivals at 40/s") &&
                                Catch::Contains("unique prompt parts lognormal:96:0.6"));
  // Multi-turn takes its own length defaults unless the lengths are given.
  f = {};
  REQUIRE(parse({"--clock", "sim", "--workload", "multi-turn", "--requests", "20"}, f) == "ok");
  CHECK_THAT(make_workload(f, SamplingParams{}).description,
             Catch::Contains("user messages lognormal:24:0.5, output lengths lognormal:40:0.5"));
  f = {};
  REQUIRE(parse({"--clock", "sim", "--workload", "multi-turn", "--requests", "20", "--prompt-lens",
                 "fixed:9"},
                f) == "ok");
  CHECK_THAT(make_workload(f, SamplingParams{}).description,
             Catch::Contains("user messages fixed:9, output lengths lognormal:40:0.5"));
  // `random` keeps chapter 04's description.
  f = {};
  REQUIRE(parse({"--clock", "sim", "--requests", "20"}, f) == "ok");
  CHECK(make_workload(f, SamplingParams{}).description ==
        "20 requests, Poisson arrivals at 40/s, prompt lengths lognormal:96:0.6, output lengths "
        "lognormal:128:0.8 (seed 1)");
}
