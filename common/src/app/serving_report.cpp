// The tables of the serving chapters 04 and 05.
#include "inferlab/app/serving_report.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/serving_cli.hpp"

namespace inferlab {

namespace {
double ms(double s) { return s * 1e3; }
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

void print_policy_table(const PolicyComparison& c, const Slo& slo) {
  std::vector<std::string> names;
  for (const EngineRun& r : c.runs) names.push_back(policy_name(r.scheduler.policy));
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](std::string label, auto&& cell) {
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < c.runs.size(); ++i) cells.push_back(cell(c.metrics[i], c.runs[i]));
    rows.emplace_back(std::move(label), std::move(cells));
  };
  using M = const ServingMetrics&;
  using R = const EngineRun&;
  row("requests / output tokens",
      [](M m, R) { return fmt::format("{} / {}", m.requests, m.output_tokens); });
  row("duration (s)", [](M m, R) { return fmt::format("{:.3f}", m.duration); });
  row("throughput (tokens/s)", [](M m, R) { return fmt::format("{:.1f}", m.throughput_tokens); });
  row("throughput (requests/s)",
      [](M m, R) { return fmt::format("{:.2f}", m.throughput_requests); });
  row("TTFT p50 / p90 / p99 (ms)", [](M m, R) {
    return fmt::format("{:.1f} / {:.1f} / {:.1f}", ms(m.ttft.p50), ms(m.ttft.p90), ms(m.ttft.p99));
  });
  row("TPOT p50 / p99 (ms)",
      [](M m, R) { return fmt::format("{:.2f} / {:.2f}", ms(m.tpot.p50), ms(m.tpot.p99)); });
  row("ITL p50 / p99 (ms)",
      [](M m, R) { return fmt::format("{:.2f} / {:.2f}", ms(m.itl.p50), ms(m.itl.p99)); });
  row("E2E p50 / p99 (s)",
      [](M m, R) { return fmt::format("{:.3f} / {:.3f}", m.e2e.p50, m.e2e.p99); });
  rows.emplace_back(
      fmt::format("goodput (req/s, TTFT<={:g}s TPOT<={:g}ms)", slo.ttft, ms(slo.tpot)),
      std::vector<std::string>{});
  row("  goodput / SLO attainment",
      [](M m, R) { return fmt::format("{:.2f} / {:.0f}%", m.goodput, 100.0 * m.slo_attainment); });
  row("steps", [](M, R r) { return fmt::format("{}", r.steps.size()); });
  row("slots busy (mean occupancy)",
      [](M, R r) { return fmt::format("{:.0f}%", 100.0 * r.mean_occupancy); });
  print_columns("", names, rows, 34, 22);
}

void print_decode_sweep(const DecodeSweep& s) {
  std::printf(
      "\ndecode throughput vs concurrent sequences (real model, %d cached tokens each, "
      "mean of %d steps, median of %d runs):\n",
      s.context, s.steps, s.reps);
  std::printf("  %5s  %10s  %8s  %16s  %18s  %9s\n", "batch", "step (ms)", "spread",
              "tokens/s (all)", "tokens/s per seq", "vs B=1");
  for (const DecodeSweepRow& r : s.rows)
    std::printf("  %5d  %10.3f  %7.0f%%  %16.1f  %18.1f  %8.1fx\n", r.batch, ms(r.step_seconds),
                100.0 * r.step_spread, r.tokens_per_second, r.tokens_per_second_per_sequence,
                r.vs_batch1);
  print_timing_noise(s.reps, s.max_spread);
  std::printf("  16 sequences decode %.1fx as many tokens/s as one.\n", s.speedup_at_16);
  if (s.too_noisy()) {
    // A ridge from two noisy samples is not a property of the machine: say so instead.
    std::printf(
        "  The timings are too noisy (widest spread %.0f%%, %d runs) to locate this "
        "machine's ridge: rerun\n  with --threads 1 --reps 5 on an idle machine.\n",
        100.0 * s.max_spread, s.reps);
    return;
  }
  std::printf(
      "  Batch 1 streams the %.0f MB of weights at %.1f GB/s; batch 64 computes at %.1f "
      "GFLOP/s. Their\n  ratio, %.1f FLOP/byte, is this machine's ridge: at %.2f bytes per "
      "weight decode turns\n  compute-bound near B = %.0f, and beyond it more sequences add "
      "latency, not throughput.\n",
      s.weight_bytes / 1e6, s.bandwidth / 1e9, s.flops / 1e9, s.ridge(), s.bytes_per_weight,
      s.turnover_batch());
  if (s.weight_bytes < 32e6)
    std::printf(
        "  (%.1f MB of weights fit in the CPU caches, so that bandwidth is the caches' and "
        "a step costs\n  per token: try --synthetic stories110M --sweep-context 8 for "
        "the memory-bound regime.)\n",
        s.weight_bytes / 1e6);
}

void print_memory_table(const std::vector<MemorySummary>& s) {
  std::vector<std::string> names;
  for (const MemorySummary& x : s) names.push_back(x.allocator);
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const char* label, auto&& cell) {
    std::vector<std::string> cells;
    for (const MemorySummary& x : s) cells.push_back(cell(x));
    rows.emplace_back(label, std::move(cells));
  };
  row("KV budget (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.kv_bytes_budget / kMiB); });
  row("peak reserved (MiB)", [](const MemorySummary& x) {
    return fmt::format("{:.2f}", x.peak_kv_bytes_reserved / kMiB);
  });
  row("peak used (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.peak_kv_bytes_used / kMiB); });
  row("waste: reserved but unused (time avg)",
      [](const MemorySummary& x) { return fmt::format("{:.1f}%", 100 * x.waste_fraction); });
  row("max concurrent sequences",
      [](const MemorySummary& x) { return std::to_string(x.max_concurrent_sequences); });
  row("preemptions", [](const MemorySummary& x) { return std::to_string(x.preemptions); });
  row("swapped (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.swapped_bytes / kMiB); });
  row("throughput (tokens/s)",
      [](const MemorySummary& x) { return fmt::format("{:.1f}", x.throughput_tokens_per_s); });
  row("saved by sharing, peak (MiB)", [](const MemorySummary& x) {
    return fmt::format("{:.2f}", x.peak_bytes_saved_by_sharing / kMiB);
  });
  print_columns("", names, rows, 40, 18);
}

void print_block_size_sweep(const BlockSizeSweep& b) {
  std::printf(
      "\nblock size sweep (paged, same workload and budget; attention: one layer, %d "
      "sequences x %d positions, median of %d):\n",
      b.sequences, b.context, b.reps);
  std::printf("  %6s  %8s  %10s  %14s  %16s\n", "block", "waste", "max seqs", "attention (us)",
              "vs contiguous");
  for (const BlockSizeRow& r : b.rows)
    std::printf("  %6d  %7.1f%%  %10d  %14.1f  %15.2fx\n", r.block_size, 100 * r.waste_fraction,
                r.max_concurrent_sequences, r.attention_seconds * 1e6, r.vs_contiguous);
}

void print_swap_vs_recompute(const std::vector<SwapVsRecompute>& table, const std::string& config,
                             const std::string& hardware, DType kv_type) {
  std::printf(
      "\nswap vs recompute for one preempted sequence (%s on %s, %s KV, host link 50 GB/s):\n",
      config.c_str(), hardware.c_str(), dtype_name(kv_type));
  std::printf("  %8s  %12s  %15s  %s\n", "tokens", "swap (ms)", "recompute (ms)", "cheaper");
  for (const SwapVsRecompute& x : table)
    std::printf("  %8ld  %12.2f  %15.2f  %s\n", x.tokens, x.swap_seconds * 1e3,
                x.recompute_seconds * 1e3,
                x.swap_seconds < x.recompute_seconds ? "swap" : "recompute");
}

}  // namespace inferlab
