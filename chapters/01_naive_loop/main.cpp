// Chapter 01: the naive generation loop.
//
// Generates text from a real model by re-running the whole sequence through the transformer at
// every step, streaming each piece as it appears, then shows what that costs: step time grows
// with the sequence, and the prompt phase (one forward over the prompt) differs from the
// generation phase (one new token per forward). All the logic lives in common/ and kernels/;
// this file only wires it together and prints.
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "inferlab/chapter_cli.hpp"
#include "inferlab/generate.hpp"

using namespace inferlab;

namespace {

// The lesson in one table: how long each forward took against how many tokens it re-processed.
void print_step_table(const GenerationResult& r) {
  std::printf("\nstep time vs position (each step re-processes the whole sequence):\n");
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
}

int run(const GenerationFlags& f) {
  const LoadedModel m = load_model(f);
  if (!f.json) print_run_header("InferLab chapter 01: the naive generation loop", m, f);

  GenerateOptions g = generate_options(f);
  g.loop = LoopKind::naive;
  const GenerationResult r = generate(*m.model, *m.tokenizer, g, [&](std::string_view piece) {
    if (!f.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  });
  if (!f.dump_logits.empty()) write_logits_file(f.dump_logits, r);

  if (f.json) {
    std::cout << generation_json("01_naive_loop", m, f, r).dump(1) << '\n';
    return 0;
  }
  std::printf("\n\n--- measurements ---\n");
  print_generation_metrics(r);
  print_step_table(r);
  std::printf("\nNext: chapter 02 keeps each position's keys and values (the KV cache), so a step "
              "forwards one token instead of all of them.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 01: the naive generation loop (every step re-processes the "
               "whole sequence)"};
  GenerationFlags f;
  add_generation_flags(app, f);
  return run_chapter(app, argc, argv, [&] { return run(f); });
}
