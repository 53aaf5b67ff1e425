#include "test_support.hpp"

// Tests of the serving metrics (common/include/inferlab/runtime/metrics.hpp): the chapter's worked TPOT
// example, percentiles against hand-computed values, goodput under an SLO, and the errors.
// Times in the serving tests are binary fractions (0.0625 = 1/16 ...) so sums and
// differences are exact and the checks can be exact equalities.

#include <cmath>
#include <limits>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/metrics.hpp"

using inferlab::Error;
using inferlab::RequestTimeline;

TEST_CASE("chapter worked example: 201 tokens, TTFT 0.5 s, E2E 10.5 s -> TPOT 50 ms",
          "[unit][metrics]") {
  // Text: TPOT = (10.5 - 0.5) / (201 - 1) = 0.05 s = 50 ms, about 20 tokens/s per user.
  REQUIRE(inferlab::tpot_from(0.5, 10.5, 201) == Approx(0.05).epsilon(1e-12));

  // The same request as a timeline: first token 0.5 s after arrival, then one every 50 ms.
  RequestTimeline t;
  t.arrival = 100.0;
  for (int i = 0; i < 201; ++i) t.token_times.push_back(100.5 + 0.05 * i);
  const auto m = inferlab::request_metrics(t);
  REQUIRE(m.output_tokens == 201);
  REQUIRE(m.ttft == Approx(0.5).epsilon(1e-9));
  REQUIRE(m.e2e == Approx(10.5).epsilon(1e-9));
  REQUIRE(m.tpot == Approx(0.05).epsilon(1e-9));
  REQUIRE(1.0 / m.tpot == Approx(20.0).epsilon(1e-9));  // per-user streaming speed
  REQUIRE(m.itl.size() == 200);
  // The identity from the text: E2E = TTFT + (N - 1) * TPOT.
  REQUIRE(m.e2e == Approx(m.ttft + 200 * m.tpot).epsilon(1e-12));
}

TEST_CASE("request_metrics: TTFT, E2E, ITL and TPOT of a small request", "[unit][metrics]") {
  RequestTimeline t{1.0, {1.5, 1.5625, 1.6875, 2.0}};
  const auto m = inferlab::request_metrics(t);
  REQUIRE(m.output_tokens == 4);
  REQUIRE(m.ttft == 0.5);
  REQUIRE(m.e2e == 1.0);
  REQUIRE(m.itl == std::vector<double>{0.0625, 0.125, 0.3125});
  REQUIRE(m.tpot == 0.5 / 3);  // the mean ITL; not the P50 ITL (0.125)

  SECTION("one token: no gaps, TPOT 0") {
    const auto one = inferlab::request_metrics(RequestTimeline{2.0, {2.25}});
    REQUIRE(one.output_tokens == 1);
    REQUIRE(one.ttft == 0.25);
    REQUIRE(one.e2e == 0.25);
    REQUIRE(one.tpot == 0.0);
    REQUIRE(one.itl.empty());
  }
  SECTION("two tokens at the same instant are allowed (non-decreasing)") {
    const auto m2 = inferlab::request_metrics(RequestTimeline{0.0, {1.0, 1.0}});
    REQUIRE(m2.itl == std::vector<double>{0.0});
  }
}

TEST_CASE("request_metrics and tpot_from reject impossible timelines", "[unit][metrics]") {
  REQUIRE_THROWS_AS(inferlab::request_metrics(RequestTimeline{0.0, {}}), Error);
  REQUIRE_THROWS_AS(inferlab::request_metrics(RequestTimeline{1.0, {0.5, 1.5}}), Error);
  REQUIRE_THROWS_AS(inferlab::request_metrics(RequestTimeline{0.0, {1.0, 2.0, 1.5}}), Error);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_AS(inferlab::request_metrics(RequestTimeline{0.0, {1.0, nan}}), Error);
  REQUIRE_THROWS_AS(inferlab::tpot_from(0.5, 1.0, 0), Error);
  REQUIRE_THROWS_AS(inferlab::tpot_from(2.0, 1.0, 5), Error);
  REQUIRE(inferlab::tpot_from(0.5, 0.5, 1) == 0.0);
}

TEST_CASE("percentile interpolates linearly between closest ranks (numpy 'linear')",
          "[unit][metrics]") {
  // Sorted: 15 20 35 40 50, ranks 0..4; p maps to rank p/100 * 4.
  const std::vector<double> v = {40.0, 15.0, 50.0, 35.0, 20.0};     // unsorted on purpose
  REQUIRE(inferlab::percentile(v, 0.0) == 15.0);                    // the minimum
  REQUIRE(inferlab::percentile(v, 100.0) == 50.0);                  // the maximum
  REQUIRE(inferlab::percentile(v, 50.0) == 35.0);                   // rank 2 exactly
  REQUIRE(inferlab::percentile(v, 25.0) == 20.0);                   // rank 1 exactly
  REQUIRE(inferlab::percentile(v, 40.0) == Approx(29.0));           // rank 1.6: 20 + 0.6 * 15
  REQUIRE(inferlab::percentile(v, 90.0) == Approx(46.0));           // rank 3.6: 40 + 0.6 * 10
  REQUIRE(inferlab::percentile(v, 99.0) == Approx(49.6));           // rank 3.96
  REQUIRE(v == std::vector<double>{40.0, 15.0, 50.0, 35.0, 20.0});  // input left untouched

  const std::vector<double> one = {7.0};
  for (double p : {0.0, 37.5, 100.0}) REQUIRE(inferlab::percentile(one, p) == 7.0);
  REQUIRE(inferlab::percentile(std::vector<double>{1.0, 3.0}, 25.0) == 1.5);

  SECTION("errors") {
    REQUIRE_THROWS_AS(inferlab::percentile(std::vector<double>{}, 50.0), Error);
    REQUIRE_THROWS_AS(inferlab::percentile(v, -1.0), Error);
    REQUIRE_THROWS_AS(inferlab::percentile(v, 100.5), Error);
    REQUIRE_THROWS_AS(inferlab::percentile(v, std::numeric_limits<double>::quiet_NaN()), Error);
  }
}

TEST_CASE("summarize gives mean, percentiles and range", "[unit][metrics]") {
  const auto s = inferlab::summarize(std::vector<double>{4.0, 1.0, 3.0, 2.0});
  REQUIRE(s.count == 4);
  REQUIRE(s.mean == 2.5);
  REQUIRE(s.p50 == 2.5);           // rank 1.5
  REQUIRE(s.p90 == Approx(3.7));   // rank 2.7
  REQUIRE(s.p99 == Approx(3.97));  // rank 2.97
  REQUIRE(s.min == 1.0);
  REQUIRE(s.max == 4.0);
  const auto empty = inferlab::summarize(std::vector<double>{});
  REQUIRE(empty.count == 0);
  REQUIRE(empty.mean == 0.0);
}

TEST_CASE("serving_metrics: throughput counts every request, goodput only those in the SLO",
          "[unit][metrics]") {
  // SLO: TTFT <= 1 s and TPOT <= 125 ms (both bounds inclusive).
  //   A: TTFT 0.5,  TPOT 0.0625 -> good
  //   B: TTFT 1.5,  TPOT 0.0625 -> too slow to start
  //   C: TTFT 0.25, TPOT 0.25   -> streams too slowly
  //   D: TTFT 1.0,  TPOT 0.125  -> good, exactly on both bounds
  const std::vector<inferlab::RequestMetrics> reqs = {
      inferlab::request_metrics({0.0, {0.5, 0.5625, 0.625}}),
      inferlab::request_metrics({1.0, {2.5, 2.5625}}),
      inferlab::request_metrics({2.0, {2.25, 2.5, 2.75, 3.0}}),
      inferlab::request_metrics({3.0, {4.0, 4.125}}),
  };
  const inferlab::Slo slo{1.0, 0.125};
  const auto m = inferlab::serving_metrics(reqs, 8.0, slo);
  REQUIRE(m.requests == 4);
  REQUIRE(m.output_tokens == 11);
  REQUIRE(m.duration == 8.0);
  REQUIRE(m.throughput_tokens == 11.0 / 8.0);
  REQUIRE(m.throughput_requests == 0.5);
  REQUIRE(m.goodput == 0.25);  // 2 good requests / 8 s: half the request throughput
  REQUIRE(m.slo_attainment == 0.5);

  REQUIRE(m.ttft.count == 4);
  REQUIRE(m.ttft.min == 0.25);
  REQUIRE(m.ttft.max == 1.5);
  REQUIRE(m.ttft.p50 == 0.75);  // sorted 0.25 0.5 1.0 1.5, rank 1.5
  REQUIRE(m.e2e.max == 1.5625);
  // ITLs pooled over all requests: 2 + 1 + 3 + 1 = 7 gaps,
  // sorted 1/16 1/16 1/16 1/8 1/4 1/4 1/4.
  REQUIRE(m.itl.count == 7);
  REQUIRE(m.itl.p50 == 0.125);
  REQUIRE(m.itl.min == 0.0625);
  REQUIRE(m.itl.max == 0.25);
  REQUIRE(m.itl.mean == Approx(1.0625 / 7));
  REQUIRE(m.tpot.mean == Approx((0.0625 + 0.0625 + 0.25 + 0.125) / 4));

  SECTION("without an SLO every request is good: goodput = request throughput") {
    const auto all = inferlab::serving_metrics(reqs, 8.0);
    REQUIRE(all.goodput == all.throughput_requests);
    REQUIRE(all.slo_attainment == 1.0);
  }
  SECTION("a stricter TTFT bound removes the request on the boundary") {
    const auto strict = inferlab::serving_metrics(reqs, 8.0, inferlab::Slo{0.99, 0.125});
    REQUIRE(strict.goodput == 0.125);  // only A
  }
}

TEST_CASE("serving_metrics rejects a non-positive duration", "[unit][metrics]") {
  const std::vector<inferlab::RequestMetrics> reqs = {inferlab::request_metrics({0.0, {0.5}})};
  REQUIRE_THROWS_AS(inferlab::serving_metrics(reqs, 0.0), Error);
  REQUIRE_THROWS_AS(inferlab::serving_metrics(reqs, -1.0), Error);
  REQUIRE_THROWS_AS(inferlab::serving_metrics(reqs, std::numeric_limits<double>::quiet_NaN()),
                    Error);
  // No requests at all is a valid (idle) window.
  const auto idle = inferlab::serving_metrics(std::vector<inferlab::RequestMetrics>{}, 5.0);
  REQUIRE(idle.throughput_tokens == 0.0);
  REQUIRE(idle.goodput == 0.0);
  REQUIRE(idle.itl.count == 0);
}
