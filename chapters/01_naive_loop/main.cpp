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
#include "inferlab/app/chat_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/repeated_generation.hpp"

using namespace inferlab;

namespace {

// The lesson in one table: how long each forward took against how many tokens it re-processed.
// The step times are the medians over the repetitions.
void print_step_table(const RepeatedGeneration& rep) {
  const GenerationResult& r = rep.median;
  const int reps = rep.reps;
  std::printf(
      "\nstep time vs position (each step re-processes the whole sequence; median of %d):\n", reps);
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
    std::printf(
        "  the last step forwarded %.1fx the tokens of the first generation step and took "
        "%.1fx as long\n",
        double(b.tokens_forwarded) / a.tokens_forwarded, b.seconds / a.seconds);
  }
  print_timing_noise(reps, rep.max_spread);
}

nlohmann::json result_json(const LoadedModel& m, const GenerationFlags& f,
                           const RepeatedGeneration& rep) {
  nlohmann::json out = generation_json("01_naive_loop", m, f, rep.median);
  out["reps"] = rep.reps;
  out["max_step_spread"] = rep.max_spread;
  return out;
}

void print_result(const RepeatedGeneration& rep) {
  std::printf("\n\n--- measurements ---\n");
  print_generation_metrics(rep.median);
  print_step_table(rep);
  std::printf(
      "\nNext: chapter 02 keeps each position's keys and values (the KV cache), so a step "
      "forwards one token instead of all of them.\n");
}

int run(const GenerationFlags& f, int reps) {
  const LoadedModel m = load_model(f);
  if (!f.json) print_run_header("InferLab chapter 01: the naive generation loop", m, f);

  GenerateOptions g = generate_options(f);
  g.loop = LoopKind::naive;
  GenerationResult r = generate(*m.model, *m.tokenizer, g, stdout_text_stream(f));
  if (!f.dump_logits.empty()) write_logits_file(f.dump_logits, r);
  if (!f.json && reps > 1)
    std::fprintf(stderr, "\n[repeating the generation %d more times...]", reps - 1);
  g.keep_logits = false;
  const RepeatedGeneration rep = repeat_for_medians(*m.model, *m.tokenizer, g, reps, std::move(r));

  if (f.json)
    std::cout << result_json(m, f, rep).dump(1) << '\n';
  else
    print_result(rep);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 01: the naive generation loop (every step re-processes the "
      "whole sequence)"};
  GenerationFlags f;
  ChatFlags chat;
  int reps = 3;
  add_generation_flags(app, f);
  add_chat_flags(app, chat);
  app.add_option("--reps", reps,
                 "run the generation this many times and report each step's median time and the "
                 "spread (1 = a single sample)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] {
    check_chat_flags(app, chat, {"--reps"});
    if (chat.chat)
      return run_chat("01_naive_loop", "InferLab chapter 01: the naive generation loop, chat", f,
                      chat, LoopKind::naive);
    return run(f, reps);
  });
}
