// The batch scheduler: FCFS admission, static or continuous batching, chunked prefill.
#include "inferlab/scheduler.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/error.hpp"

namespace inferlab {

const char* policy_name(Policy policy) {
  return policy == Policy::static_batching ? "static" : "continuous";
}

Policy parse_policy(const std::string& name) {
  if (name == "static") return Policy::static_batching;
  if (name == "continuous") return Policy::continuous;
  throw Error(fmt::format("unknown policy '{}' (expected static or continuous)", name));
}

Scheduler::Scheduler(const SchedulerConfig& config) : config_(config) {
  if (config.max_seqs < 1) throw Error(fmt::format("max_seqs {} (must be >= 1)", config.max_seqs));
  if (config.max_batched_tokens < 1) {
    throw Error(fmt::format("max_batched_tokens {} (must be >= 1)", config.max_batched_tokens));
  }
  slot_used_.assign(static_cast<std::size_t>(config.max_seqs), false);
}

void Scheduler::add(Sequence& seq) {
  seq.status = SequenceStatus::waiting;
  waiting_.push_back(&seq);
}

bool Scheduler::can_admit() const {
  if (waiting_.empty() || static_cast<int>(running_.size()) >= config_.max_seqs) return false;
  // Static batching admits only while forming a batch, i.e. in a step that began with nothing
  // running: a batch in flight is closed until its last member finishes.
  return config_.policy == Policy::continuous || forming_batch_;
}

void Scheduler::admit() {
  if (!can_admit()) throw Error("Scheduler::admit: nothing admissible (check can_admit first)");
  Sequence* seq = waiting_.front();
  waiting_.pop_front();
  const auto free = std::find(slot_used_.begin(), slot_used_.end(), false);
  seq->slot = static_cast<int>(free - slot_used_.begin());
  *free = true;
  seq->status = SequenceStatus::running;
  running_.push_back(seq);
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  int budget = config_.max_batched_tokens;
  auto take = [&](Sequence* seq) {
    const int n = std::min(seq->uncomputed(), budget);
    if (n <= 0) return;
    const bool prefill = seq->prefilling();
    plan.chunks.push_back({seq, seq->computed, n, prefill, seq->computed + n ==
                                                              static_cast<int>(seq->tokens.size())});
    (prefill ? plan.prefill_tokens : plan.decode_tokens) += n;
    budget -= n;
  };

  if (config_.policy == Policy::static_batching) {
    // A new batch takes every waiting request that fits in the slots, whatever the token
    // budget: its prompts are then prefilled chunk by chunk over the next steps.
    forming_batch_ = running_.empty();
    while (can_admit()) admit();
    forming_batch_ = false;
  }
  // Decodes first: one token per running sequence, so a long prompt never stalls them.
  for (Sequence* seq : running_)
    if (budget > 0 && !seq->prefilling()) take(seq);
  // Then the prompts already admitted, oldest first.
  for (Sequence* seq : running_)
    if (budget > 0 && seq->prefilling()) take(seq);
  // Continuous batching fills free slots now, as long as the newcomer gets some of the budget.
  if (config_.policy == Policy::continuous) {
    while (budget > 0 && can_admit()) {
      admit();
      take(running_.back());
    }
  }
  return plan;
}

void Scheduler::complete_step(const StepPlan& plan) {
  for (const ScheduledChunk& c : plan.chunks) c.seq->computed += c.count;
  // Finished sequences leave and free their slot. Under static batching that slot stays empty
  // anyway: can_admit() refuses until the whole batch is gone.
  std::erase_if(running_, [&](Sequence* seq) {
    if (!seq->finished()) return false;
    slot_used_[static_cast<std::size_t>(seq->slot)] = false;
    return true;
  });
}

}  // namespace inferlab
