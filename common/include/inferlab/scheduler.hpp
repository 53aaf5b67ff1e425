#pragma once
/// @file scheduler.hpp
/// @brief Decides each step's batch: which sequences run and how many tokens each forwards.
///
/// The scheduler knows no clock and runs no model. The engine hands it sequences as they arrive
/// (add), asks for a step (schedule), runs that step however it likes (the real model or the
/// cost model), then reports back (complete_step). Two policies:
///
///  - **static**: when nothing runs, admit up to max_seqs of the waiting requests as a batch and
///    run it until every member has finished; nobody joins a running batch. A member that
///    finishes early leaves its slot empty until the longest member is done.
///  - **continuous** (iteration-level, Orca): after every step, finished sequences leave and
///    waiting ones are admitted into the free slots.
///
/// Both use **chunked prefill** under a per-step token budget (max_batched_tokens): running
/// decodes are scheduled first (one token each, so a long prompt never stalls them), then prompt
/// chunks in admission order fill what is left of the budget. A small budget keeps every step
/// short (low inter-token latency for the decodes) but spreads a prompt over several steps
/// (higher time to first token); a large one does the opposite.

#include <deque>
#include <string>
#include <vector>

#include "inferlab/request.hpp"

namespace inferlab {

/// @brief How the batch is formed.
enum class Policy {
  static_batching,  ///< a batch runs until all its members finish
  continuous,       ///< iteration-level: join and leave at every step
};

/// @brief "static" or "continuous".
const char* policy_name(Policy policy);
/// @brief Parses "static" or "continuous". @throws inferlab::Error naming the choices.
Policy parse_policy(const std::string& name);

/// @brief The scheduler's limits.
struct SchedulerConfig {
  Policy policy = Policy::continuous;  ///< static or continuous batching
  int max_seqs = 32;             ///< slots: sequences running at once (>= 1)
  /// Tokens forwarded per step, all sequences together (>= 1). Keep it >= max_seqs: below that,
  /// the oldest running sequences take the budget's decode tokens and later ones wait.
  int max_batched_tokens = 512;
};

/// @brief One sequence's share of a step: forward tokens[start, start + count).
struct ScheduledChunk {
  Sequence* seq = nullptr;  ///< the sequence forwarded (owned by the engine, not the plan)
  int start = 0;         ///< == seq->computed when scheduled
  int count = 0;         ///< >= 1
  bool prefill = false;  ///< part of the prompt (true) or one decode token (false)
  /// True when the chunk reaches the last known token, so the step's logits are sampled.
  bool samples = false;
};

/// @brief What one step runs.
struct StepPlan {
  std::vector<ScheduledChunk> chunks;  ///< decodes first, then prompt chunks
  int decode_tokens = 0;   ///< number of decode chunks (one token each)
  int prefill_tokens = 0;  ///< prompt tokens over all chunks
  /// @brief Tokens the step forwards: decode_tokens + prefill_tokens.
  int tokens() const { return decode_tokens + prefill_tokens; }
  /// @brief True when there is nothing to run this step.
  bool empty() const { return chunks.empty(); }
};

/// @brief FCFS waiting queue, running set with slots, and the policy that links them.
class Scheduler {
 public:
  /// @throws inferlab::Error if max_seqs or max_batched_tokens < 1.
  explicit Scheduler(const SchedulerConfig& config);

  /// @brief Queues an arrived sequence (FCFS: the order of add() calls). The scheduler does not
  /// own it; it must stay at the same address until it finishes.
  void add(Sequence& seq);

  /// @brief True when the policy lets the front of the queue in now: a slot is free and, for
  /// static batching, no batch is in flight (or the batch is still being formed this step).
  bool can_admit() const;
  /// @brief Moves the front of the queue into the running set and gives it the lowest free slot.
  void admit();

  /// @brief The next step: decodes of running sequences, then prompt chunks, then admissions,
  /// never more than max_batched_tokens tokens nor max_seqs sequences. Empty when nothing is
  /// running or admissible. Call complete_step() after running it.
  StepPlan schedule();
  /// @brief Records what the step did: each chunk's sequence has `count` more computed
  /// positions (the engine has appended any sampled token and marked finished sequences);
  /// finished sequences leave the running set and release their slot.
  void complete_step(const StepPlan& plan);

  bool has_work() const { return !waiting_.empty() || !running_.empty(); }  ///< anything left
  const std::deque<Sequence*>& waiting() const { return waiting_; }  ///< FCFS order
  const std::vector<Sequence*>& running() const { return running_; }  ///< admission order
  const SchedulerConfig& config() const { return config_; }  ///< the limits it was built with

 private:
  SchedulerConfig config_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  std::vector<bool> slot_used_;  // (max_seqs)
  bool forming_batch_ = false;   // static: this step may still admit into the new batch
};

}  // namespace inferlab
