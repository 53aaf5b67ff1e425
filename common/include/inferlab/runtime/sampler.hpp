#pragma once
/// @file sampler.hpp
/// @brief Turning logits into the next token: penalties, temperature, top-k, min-p, top-p, draw.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inferlab {

/// @brief Every knob of the sampler. Applied in this order (each step documented in
/// chapter 01 and at the top of sampler.cpp):
///   1. repetition penalty (CTRL) over the distinct tokens of the history;
///   2. frequency and presence penalties (OpenAI) by occurrence count;
///   3. temperature: 0 means greedy argmax of the penalised logits, otherwise softmax(z / T);
///   4. top-k;  5. min-p;  6. top-p (on the distribution renormalised after 4-5);
///   7. renormalise and draw.
/// The order matters: libraries differ (e.g. top-p before or after temperature) and so do
/// their results. Ours follows the chapter's reference sampler.
struct SamplingParams {
  float temperature = 1.0f;         ///< >= 0; 0 means greedy argmax (after penalties)
  int top_k = 0;                    ///< >= 0; 0 disables; keep the k most probable tokens
  float top_p = 1.0f;               ///< in (0, 1]; 1 disables; smallest set with mass >= top_p
  float min_p = 0.0f;               ///< in [0, 1]; 0 disables; drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  ///< > 0; 1 disables (CTRL: positive / r, negative * r)
  float frequency_penalty = 0.0f;   ///< OpenAI style: logit -= count * frequency_penalty
  float presence_penalty = 0.0f;    ///< OpenAI style: logit -= presence_penalty if count > 0
  std::uint64_t seed = 42;          ///< RNG seed: same seed, same draws

  /// @brief Throws inferlab::Error with a message naming the parameter and its allowed range if
  /// any value is invalid (temperature < 0, top_k < 0, top_p outside (0, 1], min_p outside
  /// [0, 1], repetition_penalty <= 0, or any non-finite float).
  void validate() const;
  /// @brief True when temperature is 0: sampling is the argmax of the penalised logits.
  bool greedy() const { return temperature == 0.0f; }
  /// @brief True when sampling is the plain argmax of the logits: greedy with no penalty (a
  /// penalty needs the logits themselves). A runner can then pick the token where the logits
  /// are (ModelRunner::step_greedy: on a GPU only the token id crosses to the host).
  bool argmax_only() const {
    return greedy() && repetition_penalty == 1.0f && frequency_penalty == 0.0f &&
           presence_penalty == 0.0f;
  }
};

/// @brief A small documented RNG (xorshift64*, Vigna 2016), so draws are identical on every
/// platform and standard library (std::mt19937 is portable, but std::uniform_real_distribution
/// is not). Step: x ^= x >> 12; x ^= x << 25; x ^= x >> 27; output (x * 0x2545F4914F6CDD1D) >> 32.
class Rng {
 public:
  /// @brief Seed 0 (a fixed point of xorshift) is replaced by a fixed nonzero constant.
  explicit Rng(std::uint64_t seed);
  std::uint32_t next_u32();  ///< the high 32 bits of the xorshift64* output
  float next_f32();          ///< uniform in [0, 1) with 24 bits of precision
 private:
  std::uint64_t state_;
};

/// @name Sampling steps, usable one by one (the exercises implement some of them)
/// @{

/// @brief Repetition, frequency and presence penalties over the tokens in @p history (in place).
/// @param logits  (V) raw logits, modified in place
/// @param history the token ids the penalties look at, taken as given: the caller decides what
///                counts, normally prompt + generated tokens. Repetition penalty applies once per
///                distinct id; the frequency penalty scales with the number of occurrences.
/// @param params  the penalty settings (repetition, frequency, presence); other fields unused
/// @throws inferlab::Error if an id in @p history is outside [0, V).
void apply_penalties(std::span<float> logits, std::span<const int> history,
                     const SamplingParams& params);
/// @brief apply_penalties() with a caller-owned scratch buffer (no allocation once its capacity
/// holds the history): what Sampler uses on its hot path.
void apply_penalties(std::span<float> logits, std::span<const int> history,
                     const SamplingParams& params, std::vector<int>& scratch);
/// @brief Index of the largest logit (the lowest index wins a tie).
int argmax(std::span<const float> logits);
/// @brief In-place softmax of logits / temperature (temperature > 0): the logits shifted by
/// their max and scaled here, then kernels::softmax_cpu. Logits of -inf (masked
/// tokens) get probability 0. @throws inferlab::Error if the largest logit is not finite.
void softmax_with_temperature(std::span<float> logits, float temperature);
/// @brief Zeroes all but the k largest probabilities (k = 0: no-op; ties keep lower ids).
void top_k_filter(std::span<float> probs, int k);
/// @brief top_k_filter() with a caller-owned scratch buffer (no allocation once its capacity
/// reaches probs.size()).
void top_k_filter(std::span<float> probs, int k, std::vector<int>& scratch);
/// @brief Zeroes probabilities below min_p * max(probs) (min_p = 0: no-op). A probability equal
/// to the threshold is kept, up to float round-off (relative slack kBoundarySlack).
void min_p_filter(std::span<float> probs, float min_p);
/// @brief Keeps the smallest set of most probable tokens whose mass reaches top_p, zeroes the
/// rest (top_p = 1: no-op). The token that crosses the threshold is kept; ties in probability
/// keep lower ids first. @p probs need not sum to 1: the threshold is top_p times their current
/// total, which is the same as renormalising first (so top-p after top-k / min-p acts on the
/// renormalised distribution). Reaching the threshold allows a relative slack kBoundarySlack.
void top_p_filter(std::span<float> probs, float top_p);
/// @brief top_p_filter() with a caller-owned scratch buffer (no allocation once its capacity
/// reaches probs.size()).
void top_p_filter(std::span<float> probs, float top_p, std::vector<int>& scratch);
/// @brief Draws an index from (unnormalised, non-negative) @p probs with uniform @p u in [0,1):
/// the first index whose cumulative mass exceeds u * total. A zero-probability index is never
/// returned. @throws inferlab::Error if every probability is zero.
int sample_from(std::span<const float> probs, float u);

/// @brief Relative slack for the min-p and top-p boundaries. The parameters are decimal numbers
/// that float cannot hold exactly (0.1f * 0.6f > 0.06f), so "p >= threshold" is tested as
/// "p >= threshold * (1 - kBoundarySlack)"; 1e-6 is a few float ulps and far below any
/// probability difference a user could mean.
inline constexpr float kBoundarySlack = 1e-6f;
/// @}

/// @brief Stateful sampler: owns the RNG, reuses its buffers (after the first draw, sample()
/// allocates nothing).
class Sampler {
 public:
  /// @throws inferlab::Error if @p params are invalid or @p vocab_size <= 0.
  Sampler(const SamplingParams& params, int vocab_size);
  /// @brief Picks the next token from @p logits (not modified) given the tokens seen so far
  /// (@p history: prompt + generated tokens, see apply_penalties). Greedy takes the argmax and
  /// does not consume a random number. @throws inferlab::Error if logits.size() != vocab_size,
  /// a logit is NaN, or a history id is out of range.
  int sample(std::span<const float> logits, std::span<const int> history);
  /// @brief The filtered, renormalised distribution the next draw would use (for tests and
  /// for chapters that show it). Greedy gives a one-hot vector.
  std::vector<float> distribution(std::span<const float> logits, std::span<const int> history);
  /// @brief The parameters this sampler was built with.
  const SamplingParams& params() const { return params_; }

 private:
  /// Steps 1-6 into work_ (unnormalised filtered probabilities); returns the greedy token when
  /// temperature is 0 (work_ then holds the penalised logits), else -1.
  int prepare(std::span<const float> logits, std::span<const int> history);

  SamplingParams params_;
  int vocab_size_;
  Rng rng_;
  std::vector<float> work_;
  std::vector<int> order_;  // scratch of the filters and penalties (vocab_size capacity)
};

}  // namespace inferlab
