// Exercise 13's test: two schedules worked by hand, then agreement with the core: on random
// configurations and random arrivals, your plan_step and inferlab::Scheduler (continuous
// batching, no KV manager) plan the same chunks (sequence, start, count), step after step,
// until every request has finished. The test plays the engine for both.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/serving/request.hpp"
#include "inferlab/serving/scheduler.hpp"

namespace ex = inferlab::ex13;
using ex::Chunk;

namespace {

std::string show(const std::vector<Chunk>& plan) {
  std::ostringstream s;
  s << "{";
  for (const Chunk& c : plan)
    s << " (seq " << c.id << ", start " << c.start << ", count " << c.count << ")";
  s << " }";
  return s.str();
}

// One request of a test: its prompt length (BOS included) and how many tokens it generates.
struct Job {
  int prompt = 1;
  int output = 1;
  int arrival_step = 0;  // the step before which it joins the queue
};

// The engine's side of a step, on the exercise's state: advance computed, sample one token when
// a chunk reaches the last known token, let finished sequences leave.
void complete_step(ex::BatchState& state, const std::vector<Chunk>& plan,
                   const std::vector<Job>& jobs) {
  for (const Chunk& c : plan) {
    auto it = std::find_if(state.running.begin(), state.running.end(),
                           [&](const ex::SeqState& s) { return s.id == c.id; });
    REQUIRE(it != state.running.end());  // a chunk for a sequence that is not running
    it->computed += c.count;
    if (it->computed == it->tokens) ++it->tokens;  // the step's logits are sampled
  }
  std::erase_if(state.running, [&](const ex::SeqState& s) {
    return s.tokens - s.prompt >= jobs[std::size_t(s.id)].output;
  });
}

// Runs jobs through plan_step alone (the hand-worked cases).
std::vector<std::vector<Chunk>> run_mine(int max_seqs, int max_batched_tokens,
                                         const std::vector<Job>& jobs) {
  ex::BatchState state;
  state.max_seqs = max_seqs;
  state.max_batched_tokens = max_batched_tokens;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    state.waiting.push_back({int(i), jobs[i].prompt, jobs[i].prompt, 0});
  std::vector<std::vector<Chunk>> steps;
  while (!state.waiting.empty() || !state.running.empty()) {
    const std::vector<Chunk> plan = ex::plan_step(state);
    INFO("step " << steps.size() + 1 << ": " << state.waiting.size() << " waiting, "
                 << state.running.size() << " running, and plan_step planned no chunk");
    REQUIRE(!plan.empty());  // work is left, so something must run
    complete_step(state, plan, jobs);
    steps.push_back(plan);
    REQUIRE(steps.size() < 1000);
  }
  return steps;
}

}  // namespace

TEST_CASE("exercise 13: a schedule worked by hand (2 slots, 8 tokens per step)",
          "[exercise][ex13]") {
  // Request 0: prompt 5, 2 tokens; request 1: prompt 6, 1 token; request 2: prompt 3, 2 tokens.
  const auto steps = run_mine(2, 8, {{5, 2}, {6, 1}, {3, 2}});
  const std::vector<std::vector<Chunk>> expected = {
      {{0, 0, 5}, {1, 0, 3}},  // two admissions; the second prompt gets what is left: 3 of 6
      {{0, 5, 1}, {1, 3, 3}},  // the decode first, then the rest of the prompt
      {{2, 0, 3}},             // both finished: the slots go to request 2
      {{2, 3, 1}},
  };
  REQUIRE(steps.size() == expected.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i + 1 << ": got " << show(steps[i]) << ", expected " << show(expected[i]));
    CHECK(steps[i] == expected[i]);
  }
}

TEST_CASE("exercise 13: a budget smaller than the slots leaves a slot empty", "[exercise][ex13]") {
  // 3 slots but 2 tokens per step: two one-token prompts take the whole budget, and the third
  // request waits with a slot free until they have finished.
  const auto steps = run_mine(3, 2, {{1, 3}, {1, 3}, {1, 3}});
  const std::vector<std::vector<Chunk>> expected = {
      {{0, 0, 1}, {1, 0, 1}},
      {{0, 1, 1}, {1, 1, 1}},
      {{0, 2, 1}, {1, 2, 1}},
      {{2, 0, 1}},
      {{2, 1, 1}},
      {{2, 2, 1}},
  };
  REQUIRE(steps.size() == expected.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i + 1 << ": got " << show(steps[i]) << ", expected " << show(expected[i]));
    CHECK(steps[i] == expected[i]);
  }
}

TEST_CASE("exercise 13: limits below 1 are refused", "[exercise][ex13]") {
  ex::BatchState state;
  state.max_seqs = 0;
  state.max_batched_tokens = 8;
  CHECK_THROWS_AS(ex::plan_step(state), inferlab::Error);
  state.max_seqs = 2;
  state.max_batched_tokens = 0;
  CHECK_THROWS_AS(ex::plan_step(state), inferlab::Error);
}

TEST_CASE("exercise 13: the same chunks as inferlab::Scheduler, step after step",
          "[exercise][ex13]") {
  int configs = 0, steps = 0, starved = 0, chunked = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const int max_seqs = 1 + int(rng() % 8);
    // Budgets below max_seqs (decodes starve later sequences), near a prompt's length (prompts
    // are split into chunks), and far above (whole prompts in one step).
    const int budgets[] = {1 + int(rng() % 4), 4 + int(rng() % 40), 64 + int(rng() % 200)};
    const int max_batched_tokens = budgets[rng() % 3];
    const int n_jobs = 1 + int(rng() % 30);
    std::vector<Job> jobs(static_cast<std::size_t>(n_jobs));
    for (Job& j : jobs) {
      j.prompt = 1 + int(rng() % 100);
      j.output = 1 + int(rng() % 24);
      j.arrival_step = int(rng() % 50);
    }
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const Job& a, const Job& b) { return a.arrival_step < b.arrival_step; });
    INFO("seed " << seed << ": max_seqs " << max_seqs << ", max_batched_tokens "
                 << max_batched_tokens << ", " << n_jobs << " requests");

    // The core: its own sequences (stable addresses: the scheduler keeps pointers).
    inferlab::Scheduler core({inferlab::Policy::continuous, max_seqs, max_batched_tokens});
    std::vector<std::unique_ptr<inferlab::Sequence>> seqs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      inferlab::Request r;
      r.id = int(i);
      r.prompt_len = jobs[i].prompt;
      r.max_tokens = jobs[i].output;
      r.ignore_eos = true;  // the output length is max_tokens exactly
      seqs.push_back(
          std::make_unique<inferlab::Sequence>(inferlab::make_sequence(r, nullptr, 512, 4096)));
    }
    ex::BatchState mine;
    mine.max_seqs = max_seqs;
    mine.max_batched_tokens = max_batched_tokens;

    std::size_t arrived = 0;
    for (int step = 0; arrived < jobs.size() || core.has_work(); ++step) {
      INFO("step " << step + 1);
      REQUIRE(step < 10000);
      for (; arrived < jobs.size() && jobs[arrived].arrival_step <= step; ++arrived) {
        core.add(*seqs[arrived]);
        mine.waiting.push_back({int(arrived), jobs[arrived].prompt, jobs[arrived].prompt, 0});
      }
      const inferlab::StepPlan want_plan = core.schedule();
      std::vector<Chunk> want;
      for (const auto& c : want_plan.chunks) want.push_back({c.seq->request.id, c.start, c.count});
      const std::vector<Chunk> got = ex::plan_step(mine);
      INFO("yours: " << show(got) << "\ncore:  " << show(want));
      REQUIRE(got == want);
      // The same admissions, in the same order.
      std::vector<int> core_running, my_running;
      for (const inferlab::Sequence* s : core.running()) core_running.push_back(s->request.id);
      for (const ex::SeqState& s : mine.running) my_running.push_back(s.id);
      REQUIRE(my_running == core_running);

      if (int(core.running().size()) < max_seqs && !core.waiting().empty()) ++starved;
      for (const auto& c : want_plan.chunks)
        if (c.prefill && c.count < c.seq->prompt_tokens) ++chunked;
      // The engine: every chunk that reaches the last known token samples one (any id).
      for (const auto& c : want_plan.chunks)
        if (c.samples) c.seq->tokens.push_back(7);
      core.postprocess(want_plan);
      complete_step(mine, got, jobs);
      ++steps;
    }
    ++configs;
  }
  CHECK(configs == 60);
  // The random cases exercise what the hand-worked ones show: chunked prompts, and budgets
  // that leave a slot empty while requests wait.
  CHECK(steps > 1000);
  CHECK(chunked > 100);
  CHECK(starved > 20);
}
