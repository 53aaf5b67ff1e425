#pragma once
/// @file scheduler.hpp
/// @brief Decides each step's batch: which sequences run and how many tokens each forwards.
///
/// The scheduler knows no clock and runs no model. The engine hands it sequences as they arrive
/// (add), asks for a step (schedule), runs that step however it likes (the real model or the
/// cost model) and appends the sampled tokens, then hands the step back (postprocess), where
/// the scheduler applies the finish rule (end of text, max_tokens, context) and releases the
/// memory of finished sequences. The loop reads: schedule, run, postprocess. Two policies:
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
///
/// Memory: with a KVManager, admission also needs memory (can_allocate / allocate) and every
/// chunk needs room for its tokens (can_append / append). When a running sequence cannot get
/// the memory for its next token, the most recently admitted sequence is **preempted**: with
/// Preempt::recompute its memory is freed and it goes back to the head of the queue to prefill
/// its prompt and generated tokens again later; with Preempt::swap its blocks go to the host
/// swap area (recompute when the area is full) and come back before anyone new is admitted.

#include <deque>
#include <string>
#include <vector>

#include "inferlab/serving/kv_manager.hpp"
#include "inferlab/serving/request.hpp"

namespace inferlab {

/// @brief What happens to a preempted sequence.
enum class Preempt {
  recompute,  ///< free its memory; prefill prompt + generated tokens again later
  swap,       ///< copy its blocks to host memory; copy them back later
};
/// @brief "recompute" or "swap".
const char* preempt_name(Preempt preempt);
/// @brief Parses "recompute" or "swap". @throws inferlab::Error naming the choices.
Preempt parse_preempt(const std::string& name);

/// @brief How the batch is formed.
enum class Policy {
  static_batching,  ///< a batch runs until all its members finish
  continuous,       ///< iteration-level: join and leave at every step
};

/// @brief "static" or "continuous".
const char* policy_name(Policy policy);
/// @brief Parses "static" or "continuous". @throws inferlab::Error naming the choices.
Policy parse_policy(const std::string& name);

/// @brief The order in which waiting requests are admitted.
enum class Order {
  fcfs,  ///< first come, first served
  /// SGLang's longest-prefix-match: the waiting requests whose prompts have the longest
  /// prefix in the prefix cache go first (ties in arrival order), so requests sharing a prefix
  /// run while it is cached instead of after it was evicted. Sorting asks the cache about every
  /// waiting request at every step, so only the first kLongestPrefixWindow are sorted (SGLang
  /// falls back to FCFS beyond 128 waiting requests instead).
  longest_prefix,
};
/// @brief How many of the oldest waiting requests Order::longest_prefix sorts at each step.
inline constexpr int kLongestPrefixWindow = 256;
/// @brief "fcfs" or "longest-prefix".
const char* order_name(Order order);
/// @brief Parses "fcfs" or "longest-prefix". @throws inferlab::Error naming the choices.
Order parse_order(const std::string& name);

/// @brief The scheduler's limits.
struct SchedulerConfig {
  Policy policy = Policy::continuous;  ///< static or continuous batching
  int max_seqs = 32;                   ///< slots: sequences running at once (>= 1)
  /// Tokens forwarded per step, all sequences together (>= 1). Keep it >= max_seqs: below that,
  /// the oldest running sequences take the budget's decode tokens and later ones wait.
  int max_batched_tokens = 512;
  Preempt preempt = Preempt::recompute;  ///< what preemption does (with a KVManager)
  Order order = Order::fcfs;             ///< admission order of the waiting requests (chapter 06)
};

/// @brief One sequence's share of a step: forward tokens[start, start + count).
struct ScheduledChunk {
  Sequence* seq = nullptr;  ///< the sequence forwarded (owned by the engine, not the plan)
  int start = 0;            ///< == seq->computed when scheduled
  int count = 0;            ///< >= 1
  bool prefill = false;     ///< part of the prompt (true) or one decode token (false)
  /// True when the chunk reaches the last known token, so the step's logits are sampled.
  bool samples = false;
};

/// @brief What one step runs.
struct StepPlan {
  std::vector<ScheduledChunk> chunks;  ///< decodes first, then prompt chunks
  int decode_tokens = 0;               ///< number of decode chunks (one token each)
  int prefill_tokens = 0;              ///< prompt tokens over all chunks
  /// @brief Tokens the step forwards: decode_tokens + prefill_tokens.
  int tokens() const { return decode_tokens + prefill_tokens; }
  /// @brief True when there is nothing to run this step.
  bool empty() const { return chunks.empty(); }
};

/// @brief FCFS waiting queue, running set with slots, and the policy that links them.
class Scheduler {
 public:
  /// @brief A scheduler over @p kv (nullptr: slots only, memory never runs out).
  /// @throws inferlab::Error if max_seqs or max_batched_tokens < 1.
  explicit Scheduler(const SchedulerConfig& config, KVManager* kv = nullptr);

  /// @brief Queues an arrived sequence (FCFS: the order of add() calls). The scheduler does not
  /// own it; it must stay at the same address until it finishes.
  void add(Sequence& seq);

  /// @brief True when the policy lets the front of the queue in now: a slot is free, its
  /// memory can be had and, for static batching, no batch is in flight (or the batch is still
  /// being formed this step). Swapped-out sequences come first.
  bool can_admit() const;
  /// @brief Moves the front of the queue into the running set, gives it the lowest free slot
  /// and its memory (allocated, or swapped back in).
  void admit();

  /// @brief The next step: decodes of running sequences, then prompt chunks, then admissions,
  /// never more than max_batched_tokens tokens nor max_seqs sequences. Empty when nothing is
  /// running or admissible. Call postprocess() after running it.
  StepPlan schedule();
  /// @brief Records what the step did (the engine has appended one token to every chunk that
  /// samples): each chunk's sequence has `count` more computed positions; a sequence that
  /// sampled end of text (unless it ignores it), reached max_new_tokens or filled the context
  /// finishes, gets its stop_reason, and releases its slot and memory. A sequence whose prompt
  /// is now in the cache forks its parallel branches (Sequence::forks): each shares the prompt's
  /// KV but the last position, which it forwards itself to draw its own first token.
  void postprocess(const StepPlan& plan);
  /// @brief Ends @p seq now, between two steps (a server's client went away, or a stop string
  /// was found): it leaves the queue or the batch, its slot and its KV memory are released (its
  /// computed prefix goes to the prefix cache, as a finished sequence's does), its parallel
  /// branches not yet forked are dropped, and it is marked finished (stop_reason unchanged).
  /// Does nothing to a finished sequence.
  /// @throws inferlab::Error for a swapped-out sequence (its blocks are in the swap area).
  void cancel(Sequence& seq);

  /// @brief Anything left: waiting, swapped or running sequences.
  bool has_work() const { return !waiting_.empty() || !swapped_.empty() || !running_.empty(); }
  const std::deque<Sequence*>& swapped() const { return swapped_; }   ///< preempted to swap
  int preemptions() const { return preemptions_; }                    ///< preemptions so far
  const std::deque<Sequence*>& waiting() const { return waiting_; }   ///< FCFS order
  const std::vector<Sequence*>& running() const { return running_; }  ///< admission order
  const SchedulerConfig& config() const { return config_; }  ///< the limits it was built with

 private:
  void preempt(Sequence* victim);
  void fork_branches(Sequence& parent);
  int take_slot();
  int reserved_slots_ = 0;  // slots held for parallel branches not yet forked
  Sequence* next_admission() const;
  SchedulerConfig config_;
  KVManager* kv_;
  int preemptions_ = 0;
  std::deque<Sequence*> waiting_, swapped_;
  std::vector<Sequence*> running_;
  std::vector<bool> slot_used_;  // (max_seqs)
  bool forming_batch_ = false;   // static: this step may still admit into the new batch
};

}  // namespace inferlab
