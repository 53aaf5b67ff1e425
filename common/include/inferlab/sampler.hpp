#pragma once
/// @file sampler.hpp
/// @brief Turning logits into the next token: penalties, temperature, top-k, min-p, top-p, draw.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inferlab {

/// @brief Every knob of the sampler. Applied in this order (each step documented in
/// chapter 01): repetition penalty, frequency and presence penalties, temperature (0 = greedy),
/// softmax, top-k, min-p, top-p, renormalise, draw.
struct SamplingParams {
  float temperature = 1.0f;         ///< >= 0; 0 means greedy argmax (after penalties)
  int top_k = 0;                    ///< >= 0; 0 disables; keep the k most probable tokens
  float top_p = 1.0f;               ///< in (0, 1]; 1 disables; smallest set with mass >= top_p
  float min_p = 0.0f;               ///< in [0, 1]; 0 disables; drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  ///< > 0; 1 disables (CTRL: positive / r, negative * r)
  float frequency_penalty = 0.0f;   ///< OpenAI style: logit -= count * frequency_penalty
  float presence_penalty = 0.0f;    ///< OpenAI style: logit -= presence_penalty if count > 0
  std::uint64_t seed = 42;          ///< RNG seed: same seed, same draws

  /// @brief Throws inferlab::Error with a message naming the parameter if any value is invalid.
  void validate() const;
  bool greedy() const { return temperature == 0.0f; }
};

/// @brief A small documented RNG (xorshift64*), so draws are identical on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint32_t next_u32();
  float next_f32();  ///< uniform in [0, 1) with 24 bits of precision
 private:
  std::uint64_t state_;
};

/// @name Sampling steps, usable one by one (the exercises implement some of them)
/// @{
/// @brief Repetition, frequency and presence penalties over the tokens in @p history (in place).
void apply_penalties(std::span<float> logits, std::span<const int> history,
                     const SamplingParams& params);
/// @brief Index of the largest logit (the lowest index wins a tie).
int argmax(std::span<const float> logits);
/// @brief In-place softmax of logits / temperature (temperature > 0).
void softmax_with_temperature(std::span<float> logits, float temperature);
/// @brief Zeroes all but the k largest probabilities (k = 0: no-op; ties keep lower ids).
void top_k_filter(std::span<float> probs, int k);
/// @brief Zeroes probabilities below min_p * max(probs) (min_p = 0: no-op).
void min_p_filter(std::span<float> probs, float min_p);
/// @brief Keeps the smallest set of most probable tokens whose mass reaches top_p, zeroes the
/// rest (top_p = 1: no-op). The token that crosses the threshold is kept.
void top_p_filter(std::span<float> probs, float top_p);
/// @brief Draws an index from (unnormalised, non-negative) @p probs with uniform @p u in [0,1).
int sample_from(std::span<const float> probs, float u);
/// @}

/// @brief Stateful sampler: owns the RNG, reuses its buffers.
class Sampler {
 public:
  /// @throws inferlab::Error if @p params are invalid.
  Sampler(const SamplingParams& params, int vocab_size);
  /// @brief Picks the next token from @p logits (not modified) given the tokens seen so far.
  int sample(std::span<const float> logits, std::span<const int> history);
  /// @brief The filtered, renormalised distribution the next draw would use (for tests and
  /// for chapters that show it). Greedy gives a one-hot vector.
  std::vector<float> distribution(std::span<const float> logits, std::span<const int> history);
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  int vocab_size_;
  Rng rng_;
  std::vector<float> work_;
};

}  // namespace inferlab
