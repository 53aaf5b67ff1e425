#pragma once
/// @file speculative_decoder.hpp
/// @brief The decoding loop of speculative decoding (chapter 07): rounds of propose, verify in
/// one target forward, roll back (speculative_verify.hpp describes one round), until the
/// sequence ends as generate()'s does; and plain decoding through the same model adaptor, the
/// baseline its speed-up is measured against (analysis/speculative_speedup.hpp).

#include <span>
#include <vector>

#include "inferlab/runtime/sampler.hpp"
#include "inferlab/runtime/speculative_model.hpp"
#include "inferlab/runtime/speculative_proposers.hpp"
#include "inferlab/runtime/speculative_verify.hpp"

namespace inferlab {

/// @brief What rounds measured.
struct SpecStats {
  long rounds = 0;      ///< verification rounds (= target forward calls after the prefill)
  long proposed = 0;    ///< draft nodes proposed
  long accepted = 0;    ///< draft tokens accepted
  long emitted = 0;     ///< tokens the rounds produced (accepted + one per round)
  long rejections = 0;  ///< rounds that rejected a guess (the others accepted all they tried)
  std::vector<long> tried_at;     ///< (depth) rounds that had a guess to try at depth i
  std::vector<long> accepted_at;  ///< (depth) rounds that accepted a guess at depth i
  double draft_seconds = 0.0;     ///< in propose()
  double verify_seconds = 0.0;    ///< target forward + distributions + verification + rollback
  double target_forward_seconds = 0.0;  ///< the target's forward calls alone
  long draft_forwards = 0;              ///< draft model forward calls (0 for n-gram)

  /// @brief Acceptance rate alpha: accepted / (accepted + rejections), the share of tried
  /// positions that were accepted (a position after a rejection is never tried). The estimate
  /// of the per-token acceptance probability of the standard model.
  double acceptance_rate() const;
  /// @brief Accepted draft tokens per round.
  double mean_accepted_per_round() const;
  /// @brief Acceptance at depth i: accepted_at[i] / tried_at[i] (0 if never tried).
  double acceptance_at(int depth) const;
};

/// @brief Runs rounds of speculative decoding for one sequence on a target model.
class SpeculativeDecoder {
 public:
  /// @param target the target model (its cache is this decoder's sequence)
  /// @param proposer the guesser (its own state follows the context it is given)
  /// @param sampling the sampling parameters; the seed drives verification's draws
  /// @throws inferlab::Error for invalid sampling parameters, or a proposer whose draft
  /// model's vocabulary differs from the target's.
  SpeculativeDecoder(SpecModel& target, Proposer& proposer, const SamplingParams& sampling);

  /// @brief One round: propose, verify all in one target forward, roll back, and append the
  /// accepted tokens and the next token to @p context.
  /// @param context every token so far (>= 1 token); extended in place
  /// @param max_positions the round forwards no position at or beyond this (>= context size)
  /// @return the number of tokens appended (>= 1)
  /// @throws inferlab::Error if context is empty or already reaches max_positions.
  int round(std::vector<int>& context, int max_positions);
  /// @brief What the rounds measured so far.
  const SpecStats& stats() const { return stats_; }

 private:
  SpecModel* target_;
  Proposer* proposer_;
  Sampler sampler_;
  Rng rng_;
  bool greedy_;
  SpecStats stats_;
  DraftTree tree_;
  std::vector<float> logits_, p_;
  std::vector<int> chunk_, tree_parents_, history_;
};

/// @brief A finished generation.
struct SpecGeneration {
  std::vector<int> tokens;      ///< BOS, prompt, generated (like GenerationResult::tokens)
  double decode_seconds = 0.0;  ///< wall time after the prompt's prefill
  int generated = 0;            ///< new tokens (the end token included if one ended it)
  SpecStats stats;              ///< the rounds' measurements (empty for plain decoding)
};

/// @brief Generates with speculative decoding until `steps` positions are forwarded or an end
/// token is drawn, exactly like generate(): same stopping rule (generation_stop()), same tokens
/// under greedy decoding.
/// @param target the target (its cache is cleared first)
/// @param proposer the guesser
/// @param prompt (P) BOS + prompt ids, P <= steps
/// @param steps positions to forward, prompt included (<= the target's capacity)
/// @param sampling the sampling parameters
/// @param end_tokens the ids that end the generation: the tokenizer's end-of-generation set
///        (Tokenizer::end_of_generation_ids(): BOS for llama2.c models, `<|im_end|>` and EOS
///        for SmolLM2)
/// @throws inferlab::Error on an empty prompt or one longer than steps.
SpecGeneration speculative_generate(SpecModel& target, Proposer& proposer,
                                    std::span<const int> prompt, int steps,
                                    const SamplingParams& sampling,
                                    std::span<const int> end_tokens);

/// @brief The baseline: plain decoding with the same model adaptor (prefill, then one target
/// forward per token), timed the same way, with the same stopping rule.
/// @param target the target (its cache is cleared first)
/// @param prompt (P) BOS + prompt ids, P <= steps
/// @param steps positions to forward, prompt included (<= the target's capacity)
/// @param sampling the sampling parameters
/// @param end_tokens the ids that end the generation, as for speculative_generate()
/// @throws inferlab::Error on an empty prompt or one longer than steps.
SpecGeneration plain_generate(SpecModel& target, std::span<const int> prompt, int steps,
                              const SamplingParams& sampling, std::span<const int> end_tokens);

}  // namespace inferlab
