#pragma once
/// @file exercises/13_scheduler_step/exercise.hpp
/// @brief Exercise 13: one step of a continuous-batching scheduler with chunked prefill: which
/// waiting requests are admitted, and how many tokens each running sequence forwards.
///
/// A sequence's tokens are its prompt (P tokens, BOS included) followed by what it has
/// generated; `computed` counts the positions already forwarded into its KV cache. A step
/// forwards tokens [computed, computed + count) of some sequences, under two limits:
/// max_seqs sequences admitted at once (the slots) and max_batched_tokens tokens per step, all
/// sequences together (the budget). The plan of a step, in this order:
///
///  1. **decodes**: every running sequence whose prompt is fully computed forwards its one
///     newest token, in admission order, while the budget lasts;
///  2. **prompt chunks**: every running sequence whose prompt is not fully computed forwards as
///     much of the rest of its prompt as the budget still allows, in admission order;
///  3. **admissions**: while the budget is not used up and a slot is free, the front of the
///     waiting queue (first come, first served) is admitted and forwards as much of its prompt
///     as the budget allows.
///
/// Memory is not modelled: no KV manager, nobody is ever preempted. This is
/// inferlab::Scheduler with Policy::continuous and no KVManager, which the test runs beside it.
///
/// After the step, the engine (here: the test) does the rest: each chunk's sequence has
/// `count` more computed positions; a chunk that reaches the last known token samples one new
/// token (tokens + 1); a sequence that has generated all it wanted leaves `running`.

#include <deque>
#include <vector>

namespace inferlab::ex13 {

/// @brief One request, as the scheduler sees it.
struct SeqState {
  int id = 0;        ///< the request's id, named in the chunks
  int prompt = 0;    ///< P: prompt tokens, BOS included (>= 1)
  int tokens = 0;    ///< tokens known: P + tokens generated so far
  int computed = 0;  ///< positions already forwarded into the KV cache, 0..tokens
};

/// @brief One sequence's share of a step: forward its tokens [start, start + count).
struct Chunk {
  int id = 0;     ///< SeqState::id of the sequence
  int start = 0;  ///< its `computed` when the step is planned
  int count = 0;  ///< tokens forwarded, >= 1
  /// @brief Field-wise equality (the test compares plans).
  bool operator==(const Chunk&) const = default;
};

/// @brief The scheduler's limits and queues.
struct BatchState {
  int max_seqs = 0;               ///< slots: sequences in `running` at most (>= 1)
  int max_batched_tokens = 0;     ///< tokens one step forwards at most, all chunks together (>= 1)
  std::deque<SeqState> waiting;   ///< arrived, not admitted; the front arrived first
  std::vector<SeqState> running;  ///< admitted and not finished, in admission order
};

/// @brief Plans the next step: decodes, then prompt chunks, then admissions (see the file
/// comment). Admitted sequences move from the front of `waiting` to the back of `running`.
/// Nothing else changes: `computed` and `tokens` are the engine's to advance.
/// @param state the queues; modified by the admissions only
/// @return the step's chunks in plan order (decodes, prompt chunks, admissions); empty when
/// nothing can run
/// @throws inferlab::Error if max_seqs or max_batched_tokens is < 1.
/// @note O(running + admitted) per step.
std::vector<Chunk> plan_step(BatchState& state);

}  // namespace inferlab::ex13
