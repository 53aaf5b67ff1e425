// The batch scheduler: FCFS admission, static or continuous batching, chunked prefill.
#include "inferlab/serving/scheduler.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

const char* policy_name(Policy policy) {
  return policy == Policy::static_batching ? "static" : "continuous";
}

Policy parse_policy(const std::string& name) {
  if (name == "static") return Policy::static_batching;
  if (name == "continuous") return Policy::continuous;
  throw Error(fmt::format("unknown policy '{}' (expected static or continuous)", name));
}

const char* preempt_name(Preempt preempt) {
  return preempt == Preempt::swap ? "swap" : "recompute";
}

Preempt parse_preempt(const std::string& name) {
  if (name == "recompute") return Preempt::recompute;
  if (name == "swap") return Preempt::swap;
  throw Error(fmt::format("unknown preemption policy '{}' (expected recompute or swap)", name));
}

const char* order_name(Order order) {
  return order == Order::longest_prefix ? "longest-prefix" : "fcfs";
}

Order parse_order(const std::string& name) {
  if (name == "fcfs") return Order::fcfs;
  if (name == "longest-prefix") return Order::longest_prefix;
  throw Error(fmt::format("unknown scheduling order '{}' (expected fcfs or longest-prefix)", name));
}

Scheduler::Scheduler(const SchedulerConfig& config, KVManager* kv) : config_(config), kv_(kv) {
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

Sequence* Scheduler::next_admission() const {
  if (!swapped_.empty()) return swapped_.front();  // preempted sequences come back first
  return waiting_.empty() ? nullptr : waiting_.front();
}

bool Scheduler::can_admit() const {
  const Sequence* next = next_admission();
  // A request with parallel samples needs a slot for each of its branches.
  if (next == nullptr || static_cast<int>(running_.size()) + reserved_slots_ + 1 +
                                 static_cast<int>(next->forks.size()) >
                             config_.max_seqs)
    return false;
  // Static batching admits only while forming a batch, i.e. in a step that began with nothing
  // running: a batch in flight is closed until its last member finishes.
  if (config_.policy == Policy::static_batching && !forming_batch_) return false;
  if (kv_ == nullptr) return true;
  return next->status == SequenceStatus::swapped ? kv_->can_swap_in(*next)
                                                 : kv_->can_allocate(*next);
}

void Scheduler::admit() {
  if (!can_admit()) throw Error("Scheduler::admit: nothing admissible (check can_admit first)");
  Sequence* seq = next_admission();
  if (seq->status == SequenceStatus::swapped) {
    swapped_.pop_front();
    kv_->swap_in(*seq);
  } else {
    waiting_.pop_front();
    if (kv_) kv_->allocate(*seq);
  }
  seq->slot = take_slot();
  reserved_slots_ += static_cast<int>(seq->forks.size());
  seq->status = SequenceStatus::running;
  running_.push_back(seq);
}

int Scheduler::take_slot() {
  const auto free = std::find(slot_used_.begin(), slot_used_.end(), false);
  if (free == slot_used_.end()) throw Error("Scheduler: no free slot");
  *free = true;
  return static_cast<int>(free - slot_used_.begin());
}

void Scheduler::fork_branches(Sequence& parent) {
  for (Sequence* child : parent.forks) {
    // The child shares positions 0..P-2 and forwards the last prompt token itself, so that it
    // draws its first token from its own logits with its own RNG; writing that position into
    // the shared last block is what triggers copy-on-write.
    const int shared = parent.prompt_tokens - 1;
    kv_->fork(parent, *child, shared);
    child->computed = shared;
    child->slot = take_slot();
    child->status = SequenceStatus::running;
    running_.push_back(child);
  }
  reserved_slots_ -= static_cast<int>(parent.forks.size());
  parent.forks.clear();
}

void Scheduler::preempt(Sequence* victim) {
  std::erase(running_, victim);
  slot_used_[static_cast<std::size_t>(victim->slot)] = false;
  reserved_slots_ -= static_cast<int>(victim->forks.size());  // re-reserved when re-admitted
  ++preemptions_;
  ++victim->preemptions;
  if (config_.preempt == Preempt::swap && kv_->can_swap_out(*victim)) {
    kv_->swap_out(*victim);
    victim->status = SequenceStatus::swapped;
    swapped_.push_front(victim);
    return;
  }
  // Recompute: everything known so far becomes the prompt of its next prefill.
  kv_->free(*victim);
  victim->computed = 0;
  victim->prefill_target = static_cast<int>(victim->tokens.size());
  victim->status = SequenceStatus::waiting;
  waiting_.push_front(victim);
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  int budget = config_.max_batched_tokens;
  // Plans `seq`'s next chunk if the budget and its memory allow; false if not.
  auto take = [&](Sequence* seq) {
    const int n = std::min(seq->uncomputed(), budget);
    if (n <= 0) return false;
    if (kv_) {
      if (!kv_->can_append(*seq, n)) return false;
      kv_->append(*seq, n);
    }
    const bool prefill = seq->prefilling();
    plan.chunks.push_back({seq, seq->computed, n, prefill,
                           seq->computed + n == static_cast<int>(seq->tokens.size())});
    (prefill ? plan.prefill_tokens : plan.decode_tokens) += n;
    budget -= n;
    return true;
  };

  if (config_.order == Order::longest_prefix && kv_ && waiting_.size() > 1) {
    // Longest cached prefix first, ties in queue order (a stable sort of the window).
    const auto end = waiting_.begin() + std::min<std::ptrdiff_t>(std::ptrdiff_t(waiting_.size()),
                                                                 kLongestPrefixWindow);
    std::vector<std::pair<int, Sequence*>> keyed;
    for (auto it = waiting_.begin(); it != end; ++it)
      keyed.emplace_back(-kv_->cached_prefix(**it), *it);
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < keyed.size(); ++i) waiting_[i] = keyed[i].second;
  }
  if (config_.policy == Policy::static_batching) {
    // A new batch takes every waiting request that fits in the slots, whatever the token
    // budget: its prompts are then prefilled chunk by chunk over the next steps.
    forming_batch_ = running_.empty();
    while (can_admit()) admit();
    forming_batch_ = false;
  }
  // Decodes first: one token per running sequence, so a long prompt never stalls them. A decode
  // that finds no memory preempts the most recently admitted sequence (itself if it is that one).
  const int preempted_before = preemptions_;
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* seq = running_[i];
    if (seq->prefilling()) continue;
    while (kv_ && !kv_->can_append(*seq, 1) && running_.back() != seq) preempt(running_.back());
    if (kv_ && !kv_->can_append(*seq, 1)) {
      preempt(seq);
      break;  // it was the most recent: everyone before it has been scheduled
    }
    take(seq);
  }
  // Then the prompts already admitted, oldest first (one without memory for its chunk waits).
  for (Sequence* seq : running_)
    if (budget > 0 && seq->prefilling()) take(seq);
  // Continuous batching fills free slots now, as long as the newcomer gets some of the budget,
  // but not in a step that had to preempt: memory is short, and a newcomer would only be the
  // next victim (admitting it anyway makes sequences thrash in and out).
  if (config_.policy == Policy::continuous && preemptions_ == preempted_before) {
    while (budget > 0 && can_admit()) {
      admit();
      take(running_.back());
    }
  }
  return plan;
}

void Scheduler::postprocess(const StepPlan& plan) {
  for (const ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    s.computed += c.count;
    if (kv_) kv_->computed(s);  // e.g. a finished prefill goes into the prefix cache
    if (!s.forks.empty() && s.computed >= s.prompt_tokens) {
      if (kv_ == nullptr) throw Error("Scheduler: parallel samples need a KV manager");
      fork_branches(s);
    }
    if (!c.samples) continue;
    // The finish rule: end of text, the request's max_tokens, or the context (max_new_tokens
    // was clamped to what fits).
    const bool client_stop = s.request.output_len > 0 && s.generated() >= s.request.output_len;
    if (client_stop || (!s.request.ignore_eos && s.ends_with_end_token())) {
      s.stop_reason = StopReason::eos;
    } else if (s.generated() >= s.max_new_tokens) {
      s.stop_reason =
          s.max_new_tokens < s.request.max_tokens ? StopReason::context : StopReason::max_tokens;
    } else {
      continue;
    }
    s.status = SequenceStatus::finished;
    if (kv_) kv_->free(s);  // a finished request's memory goes back at once
  }
  // Finished sequences leave and free their slot. Under static batching that slot stays empty
  // anyway: can_admit() refuses until the whole batch is gone.
  std::erase_if(running_, [&](Sequence* seq) {
    if (!seq->finished()) return false;
    slot_used_[static_cast<std::size_t>(seq->slot)] = false;
    return true;
  });
}

void Scheduler::cancel(Sequence& seq) {
  if (seq.finished()) return;
  if (seq.status == SequenceStatus::swapped)
    throw Error(fmt::format("Scheduler::cancel: request {} is swapped out", seq.request.id));
  std::erase(waiting_, &seq);
  if (std::erase(running_, &seq) > 0) {
    slot_used_[static_cast<std::size_t>(seq.slot)] = false;
    reserved_slots_ -= static_cast<int>(seq.forks.size());
  }
  if (kv_) kv_->free(seq);
  seq.forks.clear();
  seq.status = SequenceStatus::finished;
}

}  // namespace inferlab
