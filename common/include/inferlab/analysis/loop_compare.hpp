#pragma once
/// @file loop_compare.hpp
/// @brief Chapter 02's measurements: what the KV cache saves per step, and what storing it in
/// fewer bits costs in accuracy.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief One position of the naive-vs-cached comparison.
struct StepLatency {
  int position = 0;       ///< position of the token whose logits the step produces
  double naive_s = 0.0;   ///< median over reps of the naive step's time (pos + 1 tokens forwarded)
  double cached_s = 0.0;  ///< median over reps of the cached decode step's time (1 token forwarded)
  double naive_spread = 0.0;   ///< (max - min) / median of the naive step's times
  double cached_spread = 0.0;  ///< (max - min) / median of the cached step's times
  bool identical = false;      ///< the two steps' logits have the same bits
};

/// @brief The positions chapter 02 times both ways: 8, 16, 32, ... below @p last, then @p last
/// (the last position a generation forwarded).
std::vector<int> doubling_positions(int last);

/// @brief Times one generation step both ways at each of @p positions of @p tokens: the naive
/// step re-forwards tokens[0..pos]; the cached step forwards tokens[pos] into a cache already
/// holding positions 0..pos-1 (filled beforehand, untimed). Also checks the logits agree.
/// Both steps run through the model runner of @p device.
/// @throws inferlab::Error if a position is outside [0, tokens.size()), or the device cannot run.
std::vector<StepLatency> compare_step_latency(const Model& model, const std::vector<int>& tokens,
                                              const std::vector<int>& positions, DType kv_type,
                                              int reps = 3, Device device = Device::cpu);

/// @brief The accuracy cost of one KV storage type against f32.
struct KVQuality {
  DType type = DType::f32;           ///< the type measured
  std::size_t bytes_per_token = 0;   ///< its cache bytes per token (scales included)
  double max_abs_logit_diff = 0.0;   ///< over every position of every prompt
  double mean_abs_logit_diff = 0.0;  ///< over every logit compared
  int positions = 0;                 ///< positions compared (teacher-forced)
  int argmax_changed = 0;            ///< positions whose greedy pick differs from f32's
  int sequences = 0;                 ///< prompts generated freely (greedy)
  int sequences_changed = 0;         ///< prompts whose greedy continuation differs anywhere
  int tokens_changed = 0;            ///< generated tokens that differ from f32's, summed
};

/// @brief Measures @p type against f32 over @p prompts: (1) teacher-forced on the f32 greedy
/// sequence of each prompt (`steps` positions), every logit is compared; (2) free-running
/// greedy generations are compared token by token.
KVQuality compare_kv_type(const Model& model, const Tokenizer& tokenizer,
                          const std::vector<std::string>& prompts, int steps, DType type);

/// @brief The prompts of the KV storage comparison: those of the reference outputs, a fixed,
/// varied set (one of them empty).
const std::vector<std::string>& kv_quality_prompts();

/// @brief compare_kv_type() of f32, f16 and int8, in that order, over kv_quality_prompts().
/// @param model the model
/// @param tokenizer its tokenizer
/// @param steps positions each generation may forward (0: the model's context)
/// @param progress called with each type before it is measured (may be empty)
std::vector<KVQuality> compare_kv_types(const Model& model, const Tokenizer& tokenizer, int steps,
                                        const std::function<void(DType)>& progress = {});

}  // namespace inferlab
