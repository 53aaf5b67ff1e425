// Chapter 01: the naive generation loop.
//
// Generates text from a real model by re-running the whole sequence through the transformer at
// every step, streaming each piece as it appears, then shows what that costs: step time grows
// with the sequence, and the prompt phase (one forward over the prompt) differs from the
// generation phase (one new token per forward). All the logic lives in common/ and kernels/;
// this file only wires it together and prints.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/runtime/metrics.hpp"

using namespace inferlab;

namespace {

// The lesson in one table: how long each forward took against how many tokens it re-processed.
// r's step times are the medians over the repetitions; spread[i] is step i's (max - min) / median.
void print_step_table(const GenerationResult& r, const std::vector<double>& spread, int reps) {
  std::printf("\nstep time vs position (each step re-processes the whole sequence; median of %d):\n",
              reps);
  std::printf("  %8s  %16s  %10s\n", "position", "tokens forwarded", "step ms");
  const std::size_t n = r.steps.size();
  // About 12 rows spread over the run, always the first and the last.
  const std::size_t stride = n > 12 ? (n + 11) / 12 : 1;
  for (std::size_t i = 0; i < n; i += stride) {
    const StepRecord& s = r.steps[i];
    std::printf("  %8d  %16d  %10.3f%s\n", s.position, s.tokens_forwarded, s.seconds * 1e3,
                s.prefill ? "   <- prompt phase" : "");
  }
  if ((n - 1) % stride != 0) {
    const StepRecord& s = r.steps.back();
    std::printf("  %8d  %16d  %10.3f\n", s.position, s.tokens_forwarded, s.seconds * 1e3);
  }
  if (n >= 3) {
    const StepRecord &a = r.steps[1], &b = r.steps.back();
    std::printf("  the last step forwarded %.1fx the tokens of the first generation step and took "
                "%.1fx as long\n",
                double(b.tokens_forwarded) / a.tokens_forwarded, b.seconds / a.seconds);
  }
  print_timing_noise(reps, spread.empty() ? 0.0 : *std::max_element(spread.begin(), spread.end()));
}

// Runs the same generation reps - 1 more times (same seed, so the same tokens) and gives r each
// step's median time, the run whose end-to-end time is the median for the latency metrics, and
// each step's spread. One sample on a busy machine can be off by 2x; the median of a few is not.
std::vector<double> repeat_for_medians(const LoadedModel& m, const GenerateOptions& g, int reps,
                                       GenerationResult& r) {
  std::vector<GenerationResult> runs;
  runs.push_back(r);
  for (int i = 1; i < reps; ++i) {
    runs.push_back(generate(*m.model, *m.tokenizer, g));
    if (runs.back().tokens != r.tokens)
      throw Error("--reps: a repetition generated different tokens (the loop is not deterministic)");
  }
  std::vector<double> e2e;
  for (const GenerationResult& x : runs) e2e.push_back(x.metrics.e2e);
  std::vector<std::size_t> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return e2e[a] < e2e[b]; });
  GenerationResult median_run = runs[order[order.size() / 2]];
  median_run.logits = std::move(r.logits);
  std::vector<double> spread(r.steps.size(), 0.0);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    std::vector<double> t;
    for (const GenerationResult& x : runs) t.push_back(x.steps[i].seconds);
    const Summary s = summarize(t);
    median_run.steps[i].seconds = s.p50;
    spread[i] = s.p50 > 0 ? (s.max - s.min) / s.p50 : 0.0;
  }
  r = std::move(median_run);
  return spread;
}

int run(const GenerationFlags& f, int reps) {
  const LoadedModel m = load_model(f);
  if (!f.json) print_run_header("InferLab chapter 01: the naive generation loop", m, f);

  GenerateOptions g = generate_options(f);
  g.loop = LoopKind::naive;
  GenerationResult r = generate(*m.model, *m.tokenizer, g, [&](std::string_view piece) {
    if (!f.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  });
  if (!f.dump_logits.empty()) write_logits_file(f.dump_logits, r);
  if (!f.json && reps > 1) std::fprintf(stderr, "\n[repeating the generation %d more times...]", reps - 1);
  g.keep_logits = false;
  const std::vector<double> spread = repeat_for_medians(m, g, reps, r);

  if (f.json) {
    nlohmann::json out = generation_json("01_naive_loop", m, f, r);
    out["reps"] = reps;
    out["max_step_spread"] = spread.empty() ? 0.0 : *std::max_element(spread.begin(), spread.end());
    std::cout << out.dump(1) << '\n';
    return 0;
  }
  std::printf("\n\n--- measurements ---\n");
  print_generation_metrics(r);
  print_step_table(r, spread, reps);
  std::printf("\nNext: chapter 02 keeps each position's keys and values (the KV cache), so a step "
              "forwards one token instead of all of them.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 01: the naive generation loop (every step re-processes the "
               "whole sequence)"};
  GenerationFlags f;
  int reps = 3;
  add_generation_flags(app, f);
  app.add_option("--reps", reps,
                 "run the generation this many times and report each step's median time and the "
                 "spread (1 = a single sample)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] { return run(f, reps); });
}
