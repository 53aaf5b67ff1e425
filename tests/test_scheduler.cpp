// The batch scheduler on its own, driven by a stand-in engine (no model, no clock): its
// invariants under both policies, chunked prefill, and FCFS admission.
#include <algorithm>
#include <deque>
#include <set>

#include <catch2/catch.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/scheduler.hpp"

using namespace inferlab;

namespace {

// A sequence with a made-up prompt of P tokens that stops after `output` tokens.
Sequence make_test_sequence(int id, int prompt, int output) {
  Sequence s;
  s.request.id = id;
  s.request.max_tokens = output;
  s.tokens.assign(static_cast<std::size_t>(prompt), 5);
  s.prompt_tokens = prompt;
  s.prefill_target = prompt;
  s.max_new_tokens = output;
  return s;
}

struct Trace {
  std::vector<StepPlan> plans;
  std::vector<int> running_after_schedule;    // running().size() during each step
  std::vector<std::vector<int>> running_ids;  // ids running during each step
  std::vector<int> admission_order;           // ids in the order they first got work
};

// Plays the engine: every request has arrived at the start; each step appends one token to
// sampling chunks (never end of text), and the scheduler's postprocess finishes sequences at
// their output length.
Trace drive(const SchedulerConfig& config, std::deque<Sequence>& seqs) {
  Scheduler scheduler(config);
  for (Sequence& s : seqs) scheduler.add(s);
  Trace t;
  std::set<int> seen;
  for (int guard = 0; scheduler.has_work(); ++guard) {
    REQUIRE(guard < 100000);
    StepPlan plan = scheduler.schedule();
    REQUIRE_FALSE(plan.empty());
    t.running_after_schedule.push_back(static_cast<int>(scheduler.running().size()));
    std::vector<int> ids;
    for (const Sequence* s : scheduler.running()) ids.push_back(s->request.id);
    t.running_ids.push_back(ids);
    for (const ScheduledChunk& c : plan.chunks) {
      if (seen.insert(c.seq->request.id).second) t.admission_order.push_back(c.seq->request.id);
      if (c.samples) c.seq->tokens.push_back(7);
    }
    scheduler.postprocess(plan);
    t.plans.push_back(std::move(plan));
  }
  return t;
}

std::deque<Sequence> varied_sequences(int n) {
  std::deque<Sequence> seqs;
  for (int i = 0; i < n; ++i)
    seqs.push_back(make_test_sequence(i, 1 + (i * 37) % 90, 1 + (i * 53) % 40));
  return seqs;
}

}  // namespace

TEST_CASE("scheduler: budget, max_seqs and FCFS hold under both policies", "[unit][scheduler]") {
  for (Policy policy : {Policy::static_batching, Policy::continuous}) {
    for (int budget : {1, 7, 64, 1000}) {
      for (int max_seqs : {1, 3, 8}) {
        INFO(policy_name(policy) << " budget " << budget << " max_seqs " << max_seqs);
        std::deque<Sequence> seqs = varied_sequences(20);
        const Trace t = drive({policy, max_seqs, budget}, seqs);
        for (std::size_t i = 0; i < t.plans.size(); ++i) {
          const StepPlan& p = t.plans[i];
          CHECK(p.tokens() <= budget);
          CHECK(t.running_after_schedule[i] <= max_seqs);
          CHECK(static_cast<int>(p.chunks.size()) <= max_seqs);
          std::set<const Sequence*> distinct;
          int decodes = 0, prefills = 0;
          for (const ScheduledChunk& c : p.chunks) {
            CHECK(c.count >= 1);
            CHECK(distinct.insert(c.seq).second);  // a sequence appears once per step
            if (c.prefill) {
              prefills += c.count;
              CHECK(c.start + c.count <= c.seq->prompt_tokens);
            } else {
              decodes += 1;
              CHECK(c.count == 1);
            }
          }
          CHECK(decodes == p.decode_tokens);
          CHECK(prefills == p.prefill_tokens);
        }
        // FCFS: requests first get work in arrival order.
        std::vector<int> expected(20);
        for (int i = 0; i < 20; ++i) expected[i] = i;
        CHECK(t.admission_order == expected);
        // Every request ran to completion with its whole prompt computed.
        for (const Sequence& s : seqs) {
          CHECK(s.finished());
          CHECK(s.generated() == s.max_new_tokens);
          CHECK(s.computed == static_cast<int>(s.tokens.size()) - 1);
        }
      }
    }
  }
}

TEST_CASE("static batching never admits while its batch runs", "[unit][scheduler]") {
  std::deque<Sequence> seqs = varied_sequences(13);
  const Trace t = drive({Policy::static_batching, 4, 64}, seqs);
  // Between two steps, the running set may only lose members, except when it was empty.
  bool saw_shrunk_batch = false;
  for (std::size_t i = 1; i < t.running_ids.size(); ++i) {
    const auto& before = t.running_ids[i - 1];
    const auto& now = t.running_ids[i];
    const bool new_batch = std::none_of(now.begin(), now.end(), [&](int id) {
      return std::find(before.begin(), before.end(), id) != before.end();
    });
    if (new_batch) continue;  // the previous batch finished: a new one was formed
    for (int id : now) CHECK(std::find(before.begin(), before.end(), id) != before.end());
    if (now.size() < 4) saw_shrunk_batch = true;
  }
  CHECK(saw_shrunk_batch);  // the lesson: finished members leave holes nobody fills
  // Batches are formed of consecutive requests: 0-3, 4-7, 8-11, 12.
  CHECK(t.running_ids.front() == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("continuous batching fills a freed slot at the next step", "[unit][scheduler]") {
  std::deque<Sequence> seqs = varied_sequences(13);
  SchedulerConfig config{Policy::continuous, 4, 1000};
  Scheduler scheduler(config);
  for (Sequence& s : seqs) scheduler.add(s);
  int checked = 0;
  while (scheduler.has_work()) {
    const StepPlan plan = scheduler.schedule();
    // With a budget this large, a slot is never left empty while someone waits.
    if (!scheduler.waiting().empty()) {
      CHECK(scheduler.running().size() == 4);
      ++checked;
    }
    for (const ScheduledChunk& c : plan.chunks)
      if (c.samples) c.seq->tokens.push_back(7);
    scheduler.postprocess(plan);
  }
  CHECK(checked > 0);
}

TEST_CASE("chunked prefill: decodes first, prompts split under the budget", "[unit][scheduler]") {
  std::deque<Sequence> seqs;
  seqs.push_back(make_test_sequence(0, 3, 50));   // short prompt, long output
  seqs.push_back(make_test_sequence(1, 100, 5));  // long prompt
  Scheduler scheduler({Policy::continuous, 4, 16});
  for (Sequence& s : seqs) scheduler.add(s);
  // Step 1: request 0 prefills its 3 tokens and samples; request 1 gets the other 13.
  StepPlan p = scheduler.schedule();
  REQUIRE(p.chunks.size() == 2);
  CHECK(p.chunks[0].seq == &seqs[0]);
  CHECK(p.chunks[0].count == 3);
  CHECK(p.chunks[0].samples);
  CHECK(p.chunks[1].seq == &seqs[1]);
  CHECK(p.chunks[1].start == 0);
  CHECK(p.chunks[1].count == 13);
  CHECK_FALSE(p.chunks[1].samples);
  seqs[0].tokens.push_back(9);
  scheduler.postprocess(p);
  // Following steps: request 0 decodes first (1 token), request 1's prompt takes 15.
  int prompt_done = 13, steps = 1;
  while (seqs[1].prefilling()) {
    p = scheduler.schedule();
    ++steps;
    REQUIRE(p.chunks.size() == 2);
    CHECK_FALSE(p.chunks[0].prefill);
    CHECK(p.chunks[0].seq == &seqs[0]);
    CHECK(p.chunks[1].start == prompt_done);
    CHECK(p.chunks[1].count == std::min(15, 100 - prompt_done));
    prompt_done += p.chunks[1].count;
    seqs[0].tokens.push_back(9);
    if (p.chunks[1].samples) seqs[1].tokens.push_back(9);
    scheduler.postprocess(p);
  }
  CHECK(prompt_done == 100);
  CHECK(steps == 1 + 6);  // 13 + 15 * 5 = 88, then 12: the time to first token is 7 steps
}

TEST_CASE("scheduler rejects bad limits and bad policies", "[unit][scheduler]") {
  CHECK_THROWS_AS(Scheduler({Policy::continuous, 0, 16}), Error);
  CHECK_THROWS_AS(Scheduler({Policy::continuous, 4, 0}), Error);
  CHECK_THROWS_AS(parse_policy("dynamic"), Error);
  CHECK(parse_policy("static") == Policy::static_batching);
  CHECK(std::string(policy_name(Policy::continuous)) == "continuous");
  Scheduler s({Policy::continuous, 1, 4});
  CHECK_FALSE(s.can_admit());
  CHECK_THROWS_AS(s.admit(), Error);
}
