// Chapter 07: speculative decoding.
//
// A cheap proposer guesses K tokens; the target model (the --model) checks them all in one
// forward call and keeps the longest prefix that exact rejection sampling accepts, plus one
// token of its own. The chapter runs plain decoding and every proposer in the same process
// (draft model, early exit, n-gram lookup, token tree: compare_proposers), checks that greedy
// speculative output is the plain greedy output token for token, and puts the measured speed-up
// next to the standard model's prediction. --clock sim runs the same arithmetic on chapter 03's
// roofline for a datacenter pair (Llama-3-8B drafting for Llama-3-70B on an H100) and shows
// where speculation stops paying as the batch grows (simulate_k_sweep). All the logic lives in
// common/; this file parses flags, calls it and prints.
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/analysis/speculative_compare.hpp"
#include "inferlab/analysis/speculative_sim.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/app/speculative_cli.hpp"
#include "inferlab/app/speculative_json.hpp"
#include "inferlab/base/error.hpp"

using namespace inferlab;

namespace {

int run_sim(const GenerationFlags& g, const SpeculativeFlags& f) {
  const Hardware hw = hardware_by_name(f.hardware);
  const ModelConfig target = named_config(f.sim_target), draft = named_config(f.sim_draft);
  if (target.vocab_size != draft.vocab_size) {
    throw Error(fmt::format("--sim-draft {} has a vocabulary of {} but --sim-target {} has {}",
                            f.sim_draft, draft.vocab_size, f.sim_target, target.vocab_size));
  }
  const std::vector<int> ks = k_values(f.choice.k, f.choice.sweep_k || !f.plot.empty());
  const SpecSimSweep sim = simulate_k_sweep(target, draft, hw, f.acceptance, ks, f.context);
  if (!f.plot.empty()) {
    speculation_batch_plot(sim, fmt::format("Simulated speculative decoding: {} drafting for {} "
                                            "on {}, alpha = {}",
                                            f.sim_draft, f.sim_target, hw.name, f.acceptance))
        .save(f.plot);
  }
  if (g.json) {
    nlohmann::json out = to_json(sim);
    out.update({{"chapter", "07_speculative_decoding"},
                {"clock", "sim"},
                {"hardware", hw.name},
                {"target", f.sim_target},
                {"draft", f.sim_draft},
                {"tokens", nlohmann::json::array()},
                {"text", ""}});
    std::cout << out.dump(1) << '\n';
    return 0;
  }
  std::printf(
      "InferLab chapter 07, simulated: %s drafting for %s on %s (%s), acceptance %.2f, "
      "context %lld\n(roofline lower bounds of chapter 03; both models' weights are assumed "
      "resident)\n",
      f.sim_draft.c_str(), f.sim_target.c_str(), hw.name.c_str(), hw.description.c_str(),
      f.acceptance, static_cast<long long>(f.context));
  print_sim_sweep(sim);
  std::printf(
      "\nWhy it shrinks: at batch 1 the target step reads all its weights for one token, so "
      "verifying K + 1 tokens costs about the same; as the batch grows the verification's "
      "(K + 1)x FLOPs reach the compute roof and the saving is gone.\n");
  return 0;
}

// Prints the run; the exit code is 1 when greedy speculation changed a token.
int print_real(const GenerationFlags& g, const SpeculativeFlags& f, const RepeatedProposers& rep,
               std::size_t prompt_tokens, const std::string& text, const std::string& model) {
  const ProposerComparison& res = rep.median;
  const bool greedy = g.sampling.greedy();
  std::printf("%s\n\n--- %s decoding: %d new tokens after a %zu-token prompt ---\n", text.c_str(),
              greedy ? "greedy" : "sampled", res.plain.generated, prompt_tokens);
  std::printf("plain decoding: %.0f tokens/s (one target forward per token; median of %d runs)\n\n",
              res.plain.generated / res.plain.decode_seconds, rep.runs);
  print_proposer_table(rep);
  print_best_k(rep);
  if (greedy) {
    bool all_same = true;
    for (const ProposerRun& r : res.runs) all_same = all_same && r.same_as_plain;
    std::printf("\ngreedy: every proposer's tokens equal plain greedy decoding's: %s\n",
                all_same ? "yes" : "NO (a bug)");
    if (!all_same) return 1;
  } else {
    std::printf(
        "\nsampling: the tokens differ from the plain run's (other random draws), the "
        "distribution does not (tests/test_speculative.cpp checks it with a chi-square test).\n");
  }
  if (!f.plot.empty()) {
    speedup_vs_k_plot(res.runs, model).save(f.plot);
    std::printf("plot written to %s\n", f.plot.c_str());
  }
  std::printf(
      "\nNext: --clock sim shows the same trade on datacenter hardware, and where a growing "
      "batch makes it stop paying.\n");
  return 0;
}

int run(const GenerationFlags& g, const SpeculativeFlags& f) {
  if (f.clock == "sim") return run_sim(g, f);
  const ProposerChoice choice = proposer_choice(f, g);
  const LoadedModel m = load_model(g);
  const ModelConfig& c = m.model->config();
  const int steps = g.steps <= 0 || g.steps > c.seq_len ? c.seq_len : g.steps;
  const std::optional<Model> draft = load_draft(f, choice, c, steps);
  const std::vector<int> prompt = m.tokenizer->encode(g.prompt, generate_options(g).encoding);
  if (static_cast<int>(prompt.size()) > steps)
    throw Error(fmt::format("the prompt is {} tokens but --steps is {}", prompt.size(), steps));
  if (!g.json) {
    const std::string kv =
        f.kv == "paged"
            ? fmt::format("paged, blocks of {} positions (rollback gives whole blocks back)",
                          f.block_size)
            : "contiguous";
    print_run_header("InferLab chapter 07: speculative decoding", m, g,
                     fmt::format("proposers: {}, K = {}, early exit after layer {} of {}, n-gram "
                                 "{}, tree {}x{}\nKV cache:  {}",
                                 choice.proposer, choice.k, choice.early_exit_layers(c), c.n_layers,
                                 choice.max_n, choice.tree_branch, choice.tree_depth, kv));
    if (choice.wants("tree") && !choice.tree_runs()) {
      std::printf(
          "note: the tree proposer is skipped on --device %s (tree attention runs on the CPU "
          "only)\n\n",
          g.device.c_str());
    }
  }
  // Every run draws the same tokens (same seeds); the timed numbers are medians of f.reps runs.
  std::vector<ProposerComparison> runs;
  for (int rep = 0; rep < f.reps; ++rep)
    runs.push_back(compare_proposers(*m.model, draft ? &*draft : nullptr, prompt, steps,
                                     g.sampling, choice, m.tokenizer->end_of_generation_ids()));
  const RepeatedProposers rep = median_of_runs(runs);
  const ProposerComparison& res = rep.median;
  const std::string text = stream_text(*m.tokenizer, res.runs.front().run.tokens, prompt.size());
  if (!g.json) return print_real(g, f, rep, prompt.size(), text, m.model->name());
  nlohmann::json out = to_json(res);
  out.update({{"chapter", "07_speculative_decoding"},
              {"model", m.model->name()},
              {"device", g.device},
              {"kv", f.kv},
              {"block_size", choice.storage.block_size},
              {"prompt", g.prompt},
              {"text", text}});
  std::cout << out.dump(1) << '\n';
  if (!f.plot.empty()) speedup_vs_k_plot(res.runs, title_model_name(m.model->name())).save(f.plot);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 07: speculative decoding (a cheap proposer guesses, the target "
      "verifies K tokens in one forward, the output distribution stays the target's)"};
  GenerationFlags g;
  SpeculativeFlags f;
  add_generation_flags(app, g);
  add_speculative_flags(app, f);
  app.remove_option(app.get_option("--dump-logits"));  // nothing here writes logits
  return run_chapter(app, argc, argv, [&] {
    check_speculative_flags(app, f);
    return run(g, f);
  });
}
