#pragma once
/// @file speculative_compare.hpp
/// @brief Chapter 07's experiment: plain decoding of a target, then every chosen proposer
/// (draft model, early exit, n-gram lookup, token tree) at every K, in the same process, each
/// run measured against the plain one (speedup_report()) and checked against its tokens.

#include <span>
#include <string>
#include <vector>

#include "inferlab/analysis/speculative_speedup.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/runtime/speculative_decoder.hpp"

namespace inferlab {

/// @brief One proposer's speculative run at one K, against plain decoding.
struct ProposerRun {
  std::string name;            ///< Proposer::name()
  int k = 0;                   ///< K of the speed-up formula (a tree: its depth)
  SpecGeneration run;          ///< the tokens and the rounds' statistics
  SpeedupReport report;        ///< measured and predicted speed-up
  bool same_as_plain = false;  ///< the tokens equal plain decoding's (always, when greedy)
};

/// @brief Runs @p proposer on @p target and measures it against @p plain.
/// @param target the target (its cache is cleared first)
/// @param proposer the guesser
/// @param k K of the speed-up formula (the tokens proposed per round; a tree: its depth)
/// @param prompt (P) BOS + prompt ids, P <= steps
/// @param steps positions to forward, prompt included
/// @param sampling the sampling parameters (plain decoding's)
/// @param end_tokens the ids that end the generation (Tokenizer::end_of_generation_ids())
/// @param plain plain_generate() of the same target, prompt, steps, sampling and end tokens
/// @return the run and its comparison with @p plain
ProposerRun measure_proposer(SpecModel& target, Proposer& proposer, int k,
                             std::span<const int> prompt, int steps, const SamplingParams& sampling,
                             std::span<const int> end_tokens, const SpecGeneration& plain);

/// @brief Which proposers compare_proposers() runs, and their parameters.
struct ProposerChoice {
  std::string proposer = "all";  ///< "draft", "early-exit", "ngram", "tree" or "all"
  int k = 4;                     ///< tokens proposed per round by the chain proposers
  bool sweep_k = false;          ///< run the chain proposers at every K of k_values()
  int exit_layer = 0;            ///< the early exit's layers (0: half the target's)
  int max_n = 3;                 ///< the n-gram lookup's longest suffix
  int tree_branch = 2;           ///< the tree's children per node
  int tree_depth = 3;            ///< the tree's levels
  /// Device and KV storage of the target and every draft (each has its own cache of the
  /// model's whole context).
  SpecModelOptions storage;

  /// @brief True when @p name ("draft", "early-exit", "ngram", "tree") is chosen.
  bool wants(const std::string& name) const { return proposer == "all" || proposer == name; }
  /// @brief True when the tree is chosen and can run: tree attention is on the CPU only, so on
  /// another device "all" leaves the tree out.
  bool tree_runs() const { return wants("tree") && storage.device == Device::cpu; }
  /// @brief The early exit's layers for @p target: exit_layer, or half its layers when 0.
  int early_exit_layers(const ModelConfig& target) const;
};

/// @brief Checks @p choice against @p target before anything runs.
/// @param choice the proposers and their parameters
/// @param target the target's shape
/// @param have_draft a draft model is given (the tree then drafts with it, not the early exit)
/// @throws inferlab::ParameterError for `k` outside [1, seq_len), `exit_layer` outside
/// [1, layers) when the early exit runs or it is set, `block_size` beyond the context.
void check_proposer_choice(const ProposerChoice& choice, const ModelConfig& target,
                           bool have_draft);

/// @brief Plain decoding, then every proposer's runs.
struct ProposerComparison {
  SpecGeneration plain;           ///< the reference tokens and the speed-up's denominator
  std::vector<ProposerRun> runs;  ///< for each K: draft, early-exit, n-gram; then the tree
};

/// @brief Chapter 07's experiment: plain decoding of @p target, then each chosen proposer at
/// every K (check_proposer_choice() first). The target and the drafts share the device and the
/// storage @p choice names; each has its own cache. The tree drafts with @p draft when there
/// is one, else with the early exit; its K in the formula is its depth (one draft forward per
/// level).
/// @param target the target model
/// @param draft a draft model with the target's vocabulary, or nullptr
/// @param prompt (P) BOS + prompt ids, P <= steps
/// @param steps positions to forward, prompt included (<= the target's context)
/// @param sampling the sampling parameters of every run
/// @param choice the proposers and their parameters
/// @param end_tokens the ids that end every run (Tokenizer::end_of_generation_ids(): BOS for
///        llama2.c models, `<|im_end|>` and EOS for SmolLM2)
/// @throws inferlab::Error when no chosen proposer can run (the draft proposer without a
/// draft model), and what check_proposer_choice() and the runs throw.
ProposerComparison compare_proposers(const Model& target, const Model* draft,
                                     std::span<const int> prompt, int steps,
                                     const SamplingParams& sampling, const ProposerChoice& choice,
                                     std::span<const int> end_tokens);

}  // namespace inferlab
