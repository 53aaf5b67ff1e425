// Chapter 07's experiment: plain decoding, then every proposer at every K.
#include "inferlab/analysis/speculative_compare.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

ProposerRun measure_proposer(SpecModel& target, Proposer& proposer, int k,
                             std::span<const int> prompt, int steps, const SamplingParams& sampling,
                             std::span<const int> end_tokens, const SpecGeneration& plain) {
  ProposerRun r;
  r.name = proposer.name();
  r.k = k;
  r.run = speculative_generate(target, proposer, prompt, steps, sampling, end_tokens);
  r.report = speedup_report(r.run, plain, k);
  r.same_as_plain = r.run.tokens == plain.tokens;
  return r;
}

int ProposerChoice::early_exit_layers(const ModelConfig& target) const {
  return exit_layer == 0 ? std::max(1, target.n_layers / 2) : exit_layer;
}

namespace {
// The early exit drafts for itself and, without a draft model, for the tree.
bool needs_early_exit(const ProposerChoice& choice, bool have_draft) {
  return choice.wants("early-exit") || (choice.wants("tree") && !have_draft);
}
}  // namespace

void check_proposer_choice(const ProposerChoice& choice, const ModelConfig& target,
                           bool have_draft) {
  if (choice.k < 1 || choice.k >= target.seq_len) {
    throw ParameterError("k", fmt::format("{}: must be in [1, {}] (the context is {} tokens)",
                                          choice.k, target.seq_len - 1, target.seq_len));
  }
  const int layers = choice.early_exit_layers(target);
  if ((needs_early_exit(choice, have_draft) || choice.exit_layer != 0) &&
      (layers < 1 || layers >= target.n_layers)) {
    throw ParameterError("exit_layer",
                         fmt::format("{}: must be in [1, {}] (the model has {} layers)", layers,
                                     target.n_layers - 1, target.n_layers));
  }
  if (choice.storage.block_size > target.seq_len) {
    throw ParameterError("block_size",
                         fmt::format("{}: larger than the model's context of {} positions",
                                     choice.storage.block_size, target.seq_len));
  }
}

ProposerComparison compare_proposers(const Model& target, const Model* draft,
                                     std::span<const int> prompt, int steps,
                                     const SamplingParams& sampling, const ProposerChoice& choice,
                                     std::span<const int> end_tokens) {
  const ModelConfig& c = target.config();
  const bool have_draft = draft != nullptr && (choice.wants("draft") || choice.wants("tree"));
  check_proposer_choice(choice, c, have_draft);
  SpecModel spec_target(target, choice.storage);
  std::unique_ptr<SpecModel> early;
  if (needs_early_exit(choice, have_draft) && (choice.wants("early-exit") || choice.tree_runs()))
    early = SpecModel::early_exit(target, choice.early_exit_layers(c), choice.storage);
  std::unique_ptr<SpecModel> spec_draft;
  if (have_draft) spec_draft = std::make_unique<SpecModel>(*draft, choice.storage);

  ProposerComparison res;
  res.plain = plain_generate(spec_target, prompt, steps, sampling, end_tokens);
  auto measure = [&](Proposer& proposer, int k) {
    res.runs.push_back(measure_proposer(spec_target, proposer, k, prompt, steps, sampling,
                                        end_tokens, res.plain));
  };
  for (int k : k_values(choice.k, choice.sweep_k)) {
    if (choice.wants("draft") && spec_draft) {
      DraftModelProposer p(*spec_draft, sampling, k, "draft");
      measure(p, k);
    }
    if (choice.wants("early-exit") && early) {
      DraftModelProposer p(*early, sampling, k, "early-exit");
      measure(p, k);
    }
    if (choice.wants("ngram")) {
      NgramProposer p(choice.max_n, k, c.vocab_size);
      measure(p, k);
    }
  }
  if (choice.tree_runs()) {
    TreeProposer p(spec_draft ? *spec_draft : *early, sampling, choice.tree_branch,
                   choice.tree_depth);
    measure(p, choice.tree_depth);
  }
  if (res.runs.empty()) throw Error("no proposer to run (the draft proposer needs a draft model)");
  return res;
}

}  // namespace inferlab
