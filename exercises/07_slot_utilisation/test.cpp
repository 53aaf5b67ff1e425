// Exercise 07's test: a hand-worked schedule, agreement with chapter 04's engine step by step,
// and the lesson on 50 requests with Pareto output lengths: continuous batching keeps the slots
// more than 80% busy, static batching does not.
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/serving/workload.hpp"

namespace ex = inferlab::ex07;
using ex::Batching;

namespace {

std::vector<double> utilisations(const std::vector<ex::SlotStep>& steps) {
  std::vector<double> u;
  for (const auto& s : steps) u.push_back(s.utilisation);
  return u;
}

// The exercise's workload: 50 requests, output lengths Pareto with mean 128 and alpha 1.5
// (a heavy tail: most are short, a few very long), capped at 256 as a max_tokens would, on
// 4 slots. (With fewer requests per slot, the last long request running alone at the end
// weighs more in the mean: try 8 or 16 slots.)
std::vector<inferlab::Request> pareto_requests() {
  inferlab::WorkloadSpec spec;
  spec.requests = 50;
  spec.rate = 0.0;
  spec.prompt = inferlab::parse_length_distribution("fixed:1");
  spec.output = inferlab::parse_length_distribution("pareto:128:1.5");
  spec.max_output = 256;
  spec.seed = 2024;
  return inferlab::generate_workload(spec);
}

}  // namespace

TEST_CASE("a schedule worked by hand: lengths {1, 3, 2, 5} on 2 slots", "[exercise][ex07]") {
  const std::vector<int> lengths = {1, 3, 2, 5};
  // Static: batch {1, 3} runs 3 steps (the second slot idles for 2), then {2, 5} runs 5.
  const auto st = ex::simulate_slots(lengths, 2, Batching::static_batching);
  CHECK(utilisations(st) == std::vector<double>{1, 0.5, 0.5, 1, 1, 0.5, 0.5, 0.5});
  REQUIRE(st.size() == 8);
  CHECK(st[0].waiting == 2);
  CHECK(st[2].waiting == 2);  // the queue cannot use the free slot
  CHECK(st[3].waiting == 0);
  // Continuous: the request of length 2 takes the slot freed after step 1, the one of length 5
  // the slots freed after step 3.
  const auto co = ex::simulate_slots(lengths, 2, Batching::continuous);
  CHECK(utilisations(co) == std::vector<double>{1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5});
  REQUIRE(co.size() == 8);
  CHECK(co[0].waiting == 2);
  CHECK(co[1].waiting == 1);
  CHECK(co[2].waiting == 1);
  CHECK(co[3].waiting == 0);
  CHECK(ex::mean_utilisation(st) == Approx(5.5 / 8));
  CHECK(ex::mean_utilisation(co) == Approx(5.5 / 8));
  CHECK(ex::mean_utilisation(st, true) == Approx(2.0 / 3));
  CHECK(ex::mean_utilisation(co, true) == Approx(1.0));
}

TEST_CASE("the simulation agrees with chapter 04's engine, step by step", "[exercise][ex07]") {
  const auto requests = pareto_requests();
  std::vector<int> lengths;
  for (const auto& r : requests) lengths.push_back(r.max_tokens);
  inferlab::SimEngine engine;
  engine.config = inferlab::named_config("llama3-8b");
  engine.hardware = inferlab::hardware_by_name("h100-sxm");
  for (Batching b : {Batching::static_batching, Batching::continuous}) {
    const auto policy = b == Batching::continuous ? inferlab::Policy::continuous
                                                  : inferlab::Policy::static_batching;
    // One-token prompts: a request's first step (its prefill) already produces a token.
    const inferlab::EngineRun run = inferlab::run_sim(requests, {policy, 4, 64}, engine);
    const auto steps = ex::simulate_slots(lengths, 4, b);
    REQUIRE(steps.size() == run.steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      CHECK(steps[i].busy == run.steps[i].active);
      CHECK(steps[i].waiting == run.steps[i].waiting);
    }
  }
}

TEST_CASE("50 Pareto requests: continuous keeps the slots above 80% busy, static does not",
          "[exercise][ex07]") {
  const auto requests = pareto_requests();
  std::vector<int> lengths;
  for (const auto& r : requests) lengths.push_back(r.max_tokens);
  const auto st = ex::simulate_slots(lengths, 4, Batching::static_batching);
  const auto co = ex::simulate_slots(lengths, 4, Batching::continuous);
  const double st_mean = ex::mean_utilisation(st), co_mean = ex::mean_utilisation(co);
  INFO("static " << st_mean << " (" << st.size() << " steps), continuous " << co_mean << " ("
                 << co.size() << " steps)");
  CHECK(co_mean > 0.8);
  CHECK(st_mean < 0.8);
  // While anyone waits, continuous batching never leaves a slot empty.
  CHECK(ex::mean_utilisation(co, true) == 1.0);
  CHECK(ex::mean_utilisation(st, true) < 0.8);
  // The same tokens in fewer steps: utilisation is throughput.
  CHECK(co.size() < st.size());
  long tokens = 0;
  for (int n : lengths) tokens += n;
  long busy = 0;
  for (const auto& s : co) busy += s.busy;
  CHECK(busy == tokens);
}

TEST_CASE("bad input raises inferlab::Error", "[exercise][ex07]") {
  CHECK_THROWS_AS(ex::simulate_slots(std::vector<int>{1, 2}, 0, Batching::continuous),
                  inferlab::Error);
  CHECK_THROWS_AS(ex::simulate_slots(std::vector<int>{1, 0}, 2, Batching::static_batching),
                  inferlab::Error);
  CHECK(ex::simulate_slots(std::vector<int>{}, 2, Batching::continuous).empty());
  CHECK(ex::mean_utilisation(std::vector<ex::SlotStep>{}) == 0.0);
}
