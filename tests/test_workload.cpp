// The workload generator (determinism, distribution means) and the JSONL trace reader (its
// fields and its line-numbered errors).
#include <cmath>
#include <numeric>
#include <sstream>

#include <catch2/catch.hpp>

#include "inferlab/error.hpp"
#include "inferlab/workload.hpp"

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
    read_trace(in, "t.jsonl");
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

TEST_CASE("workload: Poisson arrivals have mean gap 1 / rate; rate 0 means all at once",
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
  CHECK(sample_mean(parse_length_distribution("uniform:10:30"), n, 2) == Approx(20.0).epsilon(0.01));
  CHECK(sample_mean(parse_length_distribution("lognormal:128:0.8"), n, 3) ==
        Approx(128.0).epsilon(0.02));
  // Pareto with alpha 3 has a finite variance, so the sample mean settles.
  CHECK(sample_mean(parse_length_distribution("pareto:100:3"), n, 4) == Approx(100.0).epsilon(0.02));
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

TEST_CASE("trace: JSONL lines become requests, sorted by arrival", "[unit][workload]") {
  std::istringstream in(
      "{\"arrival\": 0.5, \"prompt\": \"Once upon a time\", \"max_tokens\": 64}\n"
      "\n"
      "# a comment\n"
      "{\"arrival\": 0.25, \"prompt_len\": 300, \"max_tokens\": 8, \"temperature\": 0,"
      " \"top_k\": 5, \"seed\": 99, \"ignore_eos\": true}\n");
  SamplingParams defaults;
  defaults.temperature = 0.7f;
  defaults.seed = 10;
  const auto reqs = read_trace(in, "t.jsonl", defaults);
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

TEST_CASE("trace: a bad line is reported with its line number", "[unit][workload]") {
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
  CHECK_THROWS_AS(load_trace("/nonexistent/trace.jsonl"), Error);
}
