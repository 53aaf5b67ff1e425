// Exercise 02's test: hand-computed latency numbers, the chapter's worked example (201 tokens,
// TTFT 0.5 s, E2E 10.5 s -> TPOT 50 ms), percentiles checked against numpy's 'linear' method by
// hand, and the errors a bad timeline must raise.

#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

using inferlab::ex02::TokenTimeline;
namespace ex = inferlab::ex02;

namespace {

/// Times here are sums of a few decimals: equal to a hand value up to rounding.
Approx near(double expected) { return Approx(expected).margin(1e-12); }

}  // namespace

TEST_CASE("the chapter's worked example: 201 tokens, TTFT 0.5 s, E2E 10.5 s", "[exercise][ex02]") {
  // Arrival at 0, first token at 0.5 s, then one token every 50 ms: the last is at 10.5 s.
  TokenTimeline timeline;
  for (int i = 0; i <= 200; ++i) timeline.token_times.push_back(0.5 + 0.05 * i);

  CHECK(ex::time_to_first_token(timeline) == near(0.5));
  CHECK(ex::end_to_end_latency(timeline) == near(10.5));
  const double tpot = ex::time_per_output_token(timeline);
  CHECK(tpot == near(0.050));         // (10.5 - 0.5) / (201 - 1) = 50 ms
  CHECK(1.0 / tpot == Approx(20.0));  // about 20 tokens/s streamed to this user

  const auto itl = ex::inter_token_latencies(timeline);
  REQUIRE(itl.size() == 200);
  for (double gap : itl) CHECK(gap == near(0.050));

  const auto report = ex::latency_report(timeline);
  CHECK(report.output_tokens == 201);
  CHECK(report.ttft == near(0.5));
  CHECK(report.e2e == near(10.5));
  CHECK(report.tpot == near(0.050));
  CHECK(report.itl_p50 == near(0.050));
  CHECK(report.itl_p99 == near(0.050));
}

TEST_CASE("a request with a stall: TPOT is the mean gap, the ITL tail shows the stall",
          "[exercise][ex02]") {
  // Arrival at 1.00 s; six tokens. The 1 s gap before token 4 is, say, a long prefill of
  // another request blocking this one's decode step.
  const TokenTimeline timeline{1.00, {1.25, 1.30, 1.40, 1.45, 2.45, 2.50}};

  CHECK(ex::time_to_first_token(timeline) == near(0.25));
  CHECK(ex::end_to_end_latency(timeline) == near(1.50));
  CHECK(ex::time_per_output_token(timeline) == near(0.25));  // (1.50 - 0.25) / 5

  const auto itl = ex::inter_token_latencies(timeline);
  REQUIRE(itl.size() == 5);
  CHECK(itl[0] == near(0.05));
  CHECK(itl[1] == near(0.10));
  CHECK(itl[2] == near(0.05));
  CHECK(itl[3] == near(1.00));
  CHECK(itl[4] == near(0.05));

  // Sorted gaps {0.05, 0.05, 0.05, 0.10, 1.00}; rank = p / 100 * 4.
  const auto report = ex::latency_report(timeline);
  CHECK(report.itl_p50 == near(0.05));                // rank 2
  CHECK(report.itl_p90 == near(0.10 + 0.60 * 0.90));  // rank 3.6  -> 0.64
  CHECK(report.itl_p99 == near(0.10 + 0.96 * 0.90));  // rank 3.96 -> 0.964
  // The median gap is 50 ms, yet the mean (TPOT) is 250 ms: one number cannot tell them apart.
}

TEST_CASE("a single token: TTFT = E2E, no gap, TPOT 0", "[exercise][ex02]") {
  const TokenTimeline timeline{2.0, {2.75}};
  CHECK(ex::time_to_first_token(timeline) == near(0.75));
  CHECK(ex::end_to_end_latency(timeline) == near(0.75));
  CHECK(ex::time_per_output_token(timeline) == 0.0);
  CHECK(ex::inter_token_latencies(timeline).empty());
  const auto report = ex::latency_report(timeline);
  CHECK(report.output_tokens == 1);
  CHECK(report.ttft == near(0.75));
  CHECK(report.itl_p99 == 0.0);
}

TEST_CASE("percentile interpolates linearly between the closest ranks (numpy 'linear')",
          "[exercise][ex02]") {
  // Given unsorted on purpose; sorted {1, 2, 3, 4}, rank = p / 100 * 3.
  const std::vector<double> values = {4.0, 1.0, 3.0, 2.0};
  CHECK(ex::percentile(values, 0.0) == near(1.0));
  CHECK(ex::percentile(values, 50.0) == near(2.5));   // rank 1.5
  CHECK(ex::percentile(values, 90.0) == near(3.7));   // rank 2.7
  CHECK(ex::percentile(values, 99.0) == near(3.97));  // rank 2.97
  CHECK(ex::percentile(values, 100.0) == near(4.0));
  CHECK(values == std::vector<double>{4.0, 1.0, 3.0, 2.0});  // the input is left alone

  CHECK(ex::percentile(std::vector<double>{10.0, 20.0}, 90.0) == near(19.0));
  CHECK(ex::percentile(std::vector<double>{7.0}, 99.0) == near(7.0));
}

TEST_CASE("bad input raises inferlab::Error", "[exercise][ex02]") {
  const TokenTimeline no_token{0.0, {}};
  const TokenTimeline before_arrival{1.0, {0.5, 1.5}};
  const TokenTimeline backwards{0.0, {0.5, 0.7, 0.6}};
  for (const auto* bad : {&no_token, &before_arrival, &backwards}) {
    CHECK_THROWS_AS(ex::time_to_first_token(*bad), inferlab::Error);
    CHECK_THROWS_AS(ex::end_to_end_latency(*bad), inferlab::Error);
    CHECK_THROWS_AS(ex::time_per_output_token(*bad), inferlab::Error);
    CHECK_THROWS_AS(ex::inter_token_latencies(*bad), inferlab::Error);
    CHECK_THROWS_AS(ex::latency_report(*bad), inferlab::Error);
  }
  CHECK_THROWS_AS(ex::percentile(std::vector<double>{}, 50.0), inferlab::Error);
  CHECK_THROWS_AS(ex::percentile(std::vector<double>{1.0}, -1.0), inferlab::Error);
  CHECK_THROWS_AS(ex::percentile(std::vector<double>{1.0}, 100.5), inferlab::Error);
}
