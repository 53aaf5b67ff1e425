// Chapter 06's tables and lines (see prefix_print.hpp).
#include "inferlab/app/prefix_print.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/app/serving_cli.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// One column per cache, one row per number.
void print_summaries(const std::vector<PrefixSummary>& s) {
  std::vector<std::string> names;
  for (const PrefixSummary& x : s) names.push_back(x.cache);
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const char* label, auto&& cell) {
    std::vector<std::string> cells;
    for (const PrefixSummary& x : s) cells.push_back(cell(x));
    rows.emplace_back(label, std::move(cells));
  };
  row("token hit rate",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}%", 100 * x.token_hit_rate); });
  row("request hit rate (>= 1 block)",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}%", 100 * x.request_hit_rate); });
  row("prefill tokens computed",
      [](const PrefixSummary& x) { return std::to_string(x.prefill_tokens_computed); });
  row("prefill tokens saved",
      [](const PrefixSummary& x) { return std::to_string(x.prefill_tokens_saved); });
  row("evicted blocks", [](const PrefixSummary& x) { return std::to_string(x.evictions); });
  row("TTFT p50 (ms)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.ttft_p50 * 1e3); });
  row("TTFT p99 (ms)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.ttft_p99 * 1e3); });
  row("throughput (tokens/s)",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}", x.throughput_tokens_per_s); });
  row("steps / mean running / preemptions", [](const PrefixSummary& x) {
    return fmt::format("{}/{:.1f}/{}", x.steps, x.mean_running, x.preemptions);
  });
  row("cache size, peak (MiB)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.cache_bytes / kMiB); });
  print_columns("prefix cache", names, rows, 36, 14);
}

}  // namespace

PrefixStudy median_study(const std::vector<PrefixStudy>& studies, PrefixStudyRepeats& repeats) {
  if (studies.empty()) throw Error("median_study(): no runs");
  PrefixStudy m = studies.front();
  repeats = {};
  repeats.runs = int(studies.size());
  auto median_of = [&](auto&& get) {
    std::vector<double> v;
    for (const PrefixStudy& s : studies) v.push_back(get(s));
    const Repeated r = repeated(v);
    repeats.max_spread = std::max(repeats.max_spread, r.spread());
    return r;
  };
  std::size_t off = m.summaries.size();
  for (std::size_t i = 0; i < m.summaries.size(); ++i)
    if (m.summaries[i].cache == "off") off = i;
  for (std::size_t i = 0; i < m.summaries.size(); ++i) {
    PrefixSummary& x = m.summaries[i];
    x.ttft_p50 = median_of([&](const PrefixStudy& s) { return s.summaries[i].ttft_p50; }).median;
    x.ttft_p99 = median_of([&](const PrefixStudy& s) { return s.summaries[i].ttft_p99; }).median;
    x.throughput_tokens_per_s = median_of([&](const PrefixStudy& s) {
                                  return s.summaries[i].throughput_tokens_per_s;
                                }).median;
    std::vector<double> ttft_ratio, tput_ratio;
    for (const PrefixStudy& s : studies) {
      const PrefixSummary& base = s.summaries[off < m.summaries.size() ? off : i];
      ttft_ratio.push_back(base.ttft_p50 / std::max(s.summaries[i].ttft_p50, 1e-12));
      tput_ratio.push_back(s.summaries[i].throughput_tokens_per_s /
                           std::max(base.throughput_tokens_per_s, 1e-12));
      m.same_tokens = m.same_tokens && s.same_tokens;
    }
    repeats.ttft_p50_ratio.push_back(repeated(ttft_ratio));
    repeats.throughput_ratio.push_back(repeated(tput_ratio));
  }
  m.open.ttft_seen_s = median_of([](const PrefixStudy& s) { return s.open.ttft_seen_s; }).median;
  m.open.ttft_unseen_s =
      median_of([](const PrefixStudy& s) { return s.open.ttft_unseen_s; }).median;
  m.closed.ttft_seen_s =
      median_of([](const PrefixStudy& s) { return s.closed.ttft_seen_s; }).median;
  m.closed.ttft_unseen_s =
      median_of([](const PrefixStudy& s) { return s.closed.ttft_unseen_s; }).median;
  return m;
}

void print_prefix_study(const PrefixStudy& study, bool simulated,
                        const PrefixStudyRepeats& repeats) {
  print_summaries(study.summaries);
  if (!simulated)
    std::printf(
        "  (real clock: TTFT, throughput and the side channel are medians of %d runs; widest "
        "spread (max - min) / median %.0f%%)\n",
        repeats.runs, 100 * repeats.max_spread);
  const PrefixSummary *off = nullptr, *radix = nullptr;
  for (const PrefixSummary& s : study.summaries) {
    if (s.cache == "off") off = &s;
    if (s.cache == "radix") radix = &s;
  }
  std::printf("\n");
  for (std::size_t i = 0; i < study.summaries.size(); ++i) {
    const PrefixSummary& s = study.summaries[i];
    if (s.cache == "off" || !off) continue;
    std::printf("%-5s vs no cache: %.0f%% of the prompt tokens never prefilled; ", s.cache.c_str(),
                100 * s.token_hit_rate);
    const Repeated& ttft = repeats.ttft_p50_ratio[i];
    const Repeated& tput = repeats.throughput_ratio[i];
    // A ratio the runs disagree on (faster in one, slower in another) is not a result.
    if (!simulated && ttft.direction_unclear())
      std::printf("\n      %s", too_noisy_text("TTFT p50 (no cache / cache)", ttft).c_str());
    else
      std::printf("TTFT p50 %.2f -> %.2f ms (%s), p99 %.2f -> %.2f ms", off->ttft_p50 * 1e3,
                  s.ttft_p50 * 1e3, ratio_text(ttft).c_str(), off->ttft_p99 * 1e3,
                  s.ttft_p99 * 1e3);
    if (!simulated && tput.direction_unclear())
      std::printf("\n      %s\n", too_noisy_text("throughput (cache / no cache)", tput).c_str());
    else
      std::printf("; throughput %s\n", ratio_text(tput).c_str());
  }
  if (study.other_order)
    std::printf("scheduling (radix): %s order hits %.1f%% of prompt tokens, %s order %.1f%%\n",
                order_name(study.order), 100 * radix->token_hit_rate, order_name(study.other),
                100 * study.other_order->token_hit_rate);
  if (!simulated)
    std::printf("each request's tokens with every cache: %s\n",
                study.same_tokens
                    ? "identical (cached keys and values are the ones prefill computes)"
                    : "DIFFERENT (the prefix cache is broken!)");
  std::printf(
      "\nside channel (%d-token prefix; alice sends it, then bob sends it, then bob sends "
      "an unseen one; medians of 5 rounds):\n",
      study.probe_tokens);
  // The verdicts follow the measurement: a gap bob can see is at least 1.5x (below that, on
  // the real clock, a busy machine or overlapping requests hide it).
  constexpr double kVisibleGap = 1.5;
  const bool open_leaks = study.open.ratio() >= kVisibleGap;
  const bool closed_leaks = study.closed.ratio() >= kVisibleGap;
  std::printf(
      "  no tenant salt:  bob's TTFT %.3f ms for alice's prefix vs %.3f ms for an unseen "
      "one (%.1fx): %s\n",
      study.open.ttft_seen_s * 1e3, study.open.ttft_unseen_s * 1e3, study.open.ratio(),
      open_leaks ? "bob learns what alice sent"
                 : "no gap measured here (the probe's requests overlapped or the machine was "
                   "busy: rerun on a quieter machine)");
  std::printf(
      "  salted by tenant: %.3f ms vs %.3f ms (%.1fx): %s\n", study.closed.ttft_seen_s * 1e3,
      study.closed.ttft_unseen_s * 1e3, study.closed.ratio(),
      closed_leaks ? "a gap although the cache is salted (noise? rerun)" : "nothing to learn");
  const PrefillSaving& w = study.worked_example;
  std::printf(
      "\nworked number (roofline at peak FLOP/s, llama3-70b on %d x A100, 2,000-token system "
      "prompt): %.0f ms of prefill per request\n  on all %d GPUs, %.3f GPU-seconds; at %.0f "
      "requests/s a prefix cache saves %.1f GPU-seconds every second\n",
      w.gpus, w.prefill_seconds * 1e3, w.gpus, w.prefill_seconds * w.gpus, w.rate,
      w.gpu_seconds_saved_per_second);
}

}  // namespace inferlab
