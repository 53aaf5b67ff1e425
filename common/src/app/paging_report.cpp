// Chapter 05's report: medians of repeated runs, the allocators compared, the memory plot.
#include "inferlab/app/paging_report.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "inferlab/app/plots.hpp"
#include "inferlab/app/serving_report.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

RepeatedAllocators median_of_allocator_runs(const std::vector<AllocatorComparison>& runs) {
  if (runs.empty()) throw Error("median_of_allocator_runs(): no runs");
  RepeatedAllocators r;
  r.median = runs.front();
  std::vector<double> ratios;
  for (const AllocatorComparison& c : runs)
    ratios.push_back(c.memory.back().throughput_tokens_per_s /
                     std::max(c.memory.front().throughput_tokens_per_s, 1e-12));
  r.throughput_ratio = repeated(ratios);
  for (std::size_t i = 0; i < r.median.memory.size(); ++i) {
    std::vector<double> tput, waste;
    for (const AllocatorComparison& c : runs) {
      tput.push_back(c.memory[i].throughput_tokens_per_s);
      waste.push_back(c.memory[i].waste_fraction);
      r.median.same_tokens = r.median.same_tokens && c.same_tokens;
    }
    r.throughput.push_back(repeated(tput));
    r.median.memory[i].throughput_tokens_per_s = r.throughput.back().median;
    r.median.memory[i].waste_fraction = repeated(waste).median;
  }
  return r;
}

RepeatedAllocators compare_allocators_repeated(const std::vector<Request>& requests,
                                               const SchedulerConfig& config,
                                               const MemoryConfig& memory,
                                               const std::vector<Allocator>& allocators,
                                               const ServingEngine& engine, int reps,
                                               bool progress) {
  std::vector<AllocatorComparison> runs;
  for (int rep = 0; rep < reps; ++rep)
    runs.push_back(
        compare_allocators(requests, config, memory, allocators, engine, [&](Allocator a) {
          if (progress)
            std::fprintf(stderr, "[serving with %s KV memory (run %d of %d)...]\n",
                         allocator_name(a), rep + 1, reps);
        }));
  return median_of_allocator_runs(runs);
}

void print_allocator_comparison(const RepeatedAllocators& rc, bool simulated) {
  const AllocatorComparison& c = rc.median;
  print_memory_table(c.memory);
  if (!simulated) {
    std::printf("  (real clock: waste and throughput are medians of %d runs; throughput spread",
                rc.throughput_ratio.runs);
    for (std::size_t i = 0; i < c.memory.size(); ++i)
      std::printf("%s %s %.0f%%", i ? "," : "", c.memory[i].allocator.c_str(),
                  100 * rc.throughput[i].spread());
    std::printf(")\n");
  }
  const MemorySummary &a = c.memory.front(), &p = c.memory.back();
  if (c.memory.size() == 2) {
    std::printf(
        "\npaged vs contiguous on the same budget: waste %.1f%% vs %.1f%%, %d vs %d "
        "sequences at once (%.1fx)",
        100 * p.waste_fraction, 100 * a.waste_fraction, p.max_concurrent_sequences,
        a.max_concurrent_sequences,
        double(p.max_concurrent_sequences) / std::max(a.max_concurrent_sequences, 1));
    if (simulated)
      std::printf(", %s the throughput\n", ratio_text(rc.throughput_ratio).c_str());
    else if (rc.throughput_ratio.direction_unclear())
      std::printf("\n%s\n", too_noisy_text("the throughput ratio", rc.throughput_ratio).c_str());
    else
      std::printf(", %s the throughput\n", ratio_text(rc.throughput_ratio).c_str());
  }
  if (!simulated && c.runs.size() > 1)
    std::printf("each request's tokens under every allocator: %s\n",
                c.same_tokens ? "identical (paging moves the keys, never changes them)"
                              : "DIFFERENT (paged attention is broken!)");
  // The counterfactual can exceed the budget: that is what sharing buys.
  if (p.peak_bytes_saved_by_sharing > p.kv_bytes_budget)
    std::printf(
        "sharing: at the peak it saved %.2f MiB of prompt copies, more than the "
        "whole %.2f MiB budget:\n  unshared, those sequences could not have been in memory "
        "at once\n",
        p.peak_bytes_saved_by_sharing / kMiB, p.kv_bytes_budget / kMiB);
}

void save_paging_plot(const std::string& path, const AllocatorComparison& c,
                      const std::string& title) {
  std::vector<const EngineRun*> views;
  for (const EngineRun& r : c.runs) views.push_back(&r);
  const SvgPlot mem = kv_memory_plot(views, title);
  std::vector<const SvgPlot*> plots = {&mem};
  std::optional<SvgPlot> tables;
  for (const EngineRun& r : c.runs)
    if (r.block_size > 0 && !r.peak_tables.tables.empty())
      tables.emplace(block_table_plot(r.peak_tables, r.block_size));
  if (tables) plots.push_back(&*tables);
  save_stacked(path, plots);
}

}  // namespace inferlab
