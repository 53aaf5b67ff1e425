// Exercise 13, one checked answer: one step of continuous batching with chunked prefill.
#include <algorithm>
#include <string>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex13 {

std::vector<Chunk> plan_step(BatchState& state) {
  if (state.max_seqs < 1 || state.max_batched_tokens < 1) {
    throw Error("plan_step: max_seqs " + std::to_string(state.max_seqs) +
                " and max_batched_tokens " + std::to_string(state.max_batched_tokens) +
                " (both must be >= 1)");
  }
  std::vector<Chunk> plan;
  int budget = state.max_batched_tokens;
  // Forwards as many of seq's known but uncomputed tokens as the budget allows.
  auto take = [&](const SeqState& seq) {
    const int count = std::min(seq.tokens - seq.computed, budget);
    if (count <= 0) return;
    plan.push_back({seq.id, seq.computed, count});
    budget -= count;
  };
  // Decodes first, one token each: a long prompt must never stall the sequences already
  // streaming their answers (their inter-token latency is what a user sees).
  for (const SeqState& seq : state.running)
    if (budget > 0 && seq.computed >= seq.prompt) take(seq);
  // Then prompts already admitted, oldest first: they were promised a slot and started.
  for (const SeqState& seq : state.running)
    if (budget > 0 && seq.computed < seq.prompt) take(seq);
  // Then newcomers, into free slots, but only while each one gets some of the budget: a
  // sequence admitted without work would hold a slot for nothing.
  while (budget > 0 && !state.waiting.empty() &&
         static_cast<int>(state.running.size()) < state.max_seqs) {
    state.running.push_back(state.waiting.front());
    state.waiting.pop_front();
    take(state.running.back());
  }
  return plan;
}

}  // namespace inferlab::ex13
