#pragma once
/// @file paging_report.hpp
/// @brief Chapter 05's report of contiguous vs paged KV memory: the medians of the real clock's
/// repeated runs, the memory table with the comparison that is the chapter's lesson, and the
/// plot of memory over time with the block tables.

#include <string>
#include <vector>

#include "inferlab/app/real_clock_repeats.hpp"
#include "inferlab/serving/run_compare.hpp"

namespace inferlab {

/// @brief The runs of one allocator comparison: the first run with its timed quantities
/// (throughput, waste) replaced by their medians over all runs, and the spread of each.
struct RepeatedAllocators {
  AllocatorComparison median;        ///< the first run, its timed numbers the runs' medians
  std::vector<Repeated> throughput;  ///< one per allocator, over the runs
  Repeated throughput_ratio;         ///< last allocator / first, one ratio per run
};

/// @brief The medians of @p runs (one comparison per run, the allocators in the same order);
/// `same_tokens` holds only if it held in every run.
/// @param runs at least one comparison
/// @return the medians, with the runs' spreads
/// @throws inferlab::Error if @p runs is empty
RepeatedAllocators median_of_allocator_runs(const std::vector<AllocatorComparison>& runs);

/// @brief compare_allocators() run @p reps times on the same requests, and the medians of the
/// runs (median_of_allocator_runs()).
/// @param requests the workload
/// @param config the scheduler's limits
/// @param memory the KV memory (its allocator is set to each of @p allocators in turn)
/// @param allocators the allocators, in the order of the table's columns
/// @param engine the real or simulated engine
/// @param reps runs of the whole comparison (1 on the simulated clock, which is deterministic)
/// @param progress whether to say on stderr which allocator and run is serving
/// @return the medians of the runs
RepeatedAllocators compare_allocators_repeated(
    const std::vector<Request>& requests, const SchedulerConfig& config, const MemoryConfig& memory,
    const std::vector<Allocator>& allocators, const ServingEngine& engine, int reps, bool progress);

/// @brief Prints the memory table of @p rc, how noisy its real-clock numbers are, the paged vs
/// contiguous comparison (waste, sequences at once, throughput), whether the tokens agree, and
/// what sharing saved when it saved more than the whole budget.
/// @param rc the medians of the runs
/// @param simulated true on the simulated clock (one deterministic run)
void print_allocator_comparison(const RepeatedAllocators& rc, bool simulated);

/// @brief Writes an SVG of KV memory over time for every run of @p c and, below it, the block
/// tables at the peak of a paged run (save_stacked()).
/// @param path the SVG file
/// @param c the comparison
/// @param title the memory plot's title
/// @throws inferlab::Error if the file cannot be written
void save_paging_plot(const std::string& path, const AllocatorComparison& c,
                      const std::string& title);

}  // namespace inferlab
