// Exercise 07, the answer: per-step slot utilisation of static and continuous batching.
#include "exercise.hpp"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab::ex07 {

std::vector<SlotStep> simulate_slots(std::span<const int> output_lengths, int slots,
                                     Batching policy) {
  if (slots < 1) throw Error(fmt::format("slots = {} (must be >= 1)", slots));
  std::deque<int> waiting;  // remaining steps of each queued request, FCFS
  for (int n : output_lengths) {
    if (n < 1) throw Error(fmt::format("output length {} (must be >= 1)", n));
    waiting.push_back(n);
  }
  std::vector<int> running;  // remaining steps of each request holding a slot
  std::vector<SlotStep> steps;
  while (!waiting.empty() || !running.empty()) {
    // Static admits only into an empty batch; continuous into any free slot.
    const bool may_admit = policy == Batching::continuous || running.empty();
    while (may_admit && !waiting.empty() && static_cast<int>(running.size()) < slots) {
      running.push_back(waiting.front());
      waiting.pop_front();
    }
    const int busy = static_cast<int>(running.size());
    steps.push_back({busy, static_cast<int>(waiting.size()), static_cast<double>(busy) / slots});
    for (int& r : running) --r;  // one token each
    std::erase(running, 0);      // finished requests leave at the end of the step
  }
  return steps;
}

double mean_utilisation(std::span<const SlotStep> steps, bool only_while_waiting) {
  double sum = 0.0;
  int n = 0;
  for (const SlotStep& s : steps) {
    if (only_while_waiting && s.waiting == 0) continue;
    sum += s.utilisation;
    ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

}  // namespace inferlab::ex07
