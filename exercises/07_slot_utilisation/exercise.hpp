#pragma once
/// @file exercises/07_slot_utilisation/exercise.hpp
/// @brief Exercise 07: how full are the batch slots, step by step, under static and continuous
/// batching?
///
/// The model of the exercise: B slots; N requests all waiting at time 0 in FCFS order; request i
/// needs output_lengths[i] steps, one token per step (prompts are ignored: think of them as
/// already prefilled). A step runs every request that holds a slot; a request that has produced
/// its last token leaves its slot at the end of that step.
///
///  - static: when no request holds a slot, the first min(B, waiting) waiting requests take
///    slots, and nobody else joins until all of them have finished;
///  - continuous: at the start of every step, free slots are given to waiting requests.
///
/// The utilisation of a step is (slots busy in it) / B.

#include <span>
#include <vector>

namespace inferlab::ex07 {

/// @brief The two policies of chapter 04.
enum class Batching { static_batching, continuous };

/// @brief What one step looked like.
struct SlotStep {
  int busy = 0;              ///< requests holding a slot (and producing a token) in this step
  int waiting = 0;           ///< requests still queued during this step (after admission)
  double utilisation = 0.0;  ///< busy / B
};

/// @brief Simulates the steps until every request has finished.
/// @param output_lengths (N) steps each request needs, every one >= 1
/// @param slots B >= 1
/// @return one SlotStep per step, in order (as many steps as the run takes)
/// @throws inferlab::Error if slots < 1 or a length is < 1.
/// @note O(steps x B).
std::vector<SlotStep> simulate_slots(std::span<const int> output_lengths, int slots,
                                     Batching policy);

/// @brief Mean utilisation over @p steps; with @p only_while_waiting, over the steps in which
/// some request was still queued (the steady state of a busy server), 0 if there is none.
double mean_utilisation(std::span<const SlotStep> steps, bool only_while_waiting = false);

}  // namespace inferlab::ex07
