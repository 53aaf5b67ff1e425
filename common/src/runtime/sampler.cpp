/// @file sampler.cpp
/// @brief From logits to the next token.
///
/// The pipeline, in the order it is applied (the order matters: libraries differ, and so do
/// their outputs for the same parameters):
///
///   1. Repetition penalty (CTRL, Keskar et al. 2019), once per DISTINCT token of the history:
///      a positive logit is divided by r, a negative one multiplied by r. Both make a seen token
///      less likely when r > 1 (dividing a negative logit would make it MORE likely, which is why
///      the sign decides).
///   2. Frequency and presence penalties (OpenAI API): logit -= count * frequency
///      + (count > 0) * presence, with count the number of occurrences in the history.
///   3. Temperature T: T = 0 is greedy, the argmax of the penalised logits (lowest id on a tie),
///      and stops here. Otherwise p = softmax(z / T), computed with the max subtracted so exp
///      never overflows.
///   4. Top-k: keep the k most probable tokens (0 = off).
///   5. Min-p: drop tokens with p < min_p * p_max (0 = off).
///   6. Top-p (nucleus): sort descending, keep the smallest prefix whose mass reaches top_p;
///      the token that crosses the threshold is kept (1 = off).
///   7. Renormalise and draw with sample_from.
///
/// Between the filters we never renormalise explicitly, and we do not need to: top-k and min-p
/// only compare probabilities with each other, and top-p measures the threshold against the
/// current total mass (top_p * total). Each filter therefore acts exactly as if the
/// distribution had been renormalised before it — the standard definition — while the vector
/// is scaled only once, at the end.
///
/// History: the penalty functions use the ids they are given. The caller decides what counts,
/// normally the prompt followed by the tokens generated so far.

#include "inferlab/runtime/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/softmax.hpp"

namespace inferlab {

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

void SamplingParams::validate() const {
  // Every check is written so that NaN fails it: a comparison with NaN is always false.
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    throw Error(fmt::format("sampling: temperature must be finite and >= 0 (0 = greedy), got {}",
                            temperature));
  }
  if (top_k < 0) {
    throw Error(fmt::format("sampling: top_k must be >= 0 (0 = off), got {}", top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    throw Error(fmt::format("sampling: top_p must be in (0, 1] (1 = off), got {}", top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    throw Error(fmt::format("sampling: min_p must be in [0, 1] (0 = off), got {}", min_p));
  }
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    throw Error(fmt::format("sampling: repetition_penalty must be finite and > 0 (1 = off), got {}",
                            repetition_penalty));
  }
  if (!std::isfinite(frequency_penalty)) {
    throw Error(fmt::format("sampling: frequency_penalty must be finite (0 = off), got {}",
                            frequency_penalty));
  }
  if (!std::isfinite(presence_penalty)) {
    throw Error(fmt::format("sampling: presence_penalty must be finite (0 = off), got {}",
                            presence_penalty));
  }
}

// ---------------------------------------------------------------------------------------------
// RNG
// ---------------------------------------------------------------------------------------------

namespace {
// Zero is a fixed point of xorshift (every shift-xor of 0 is 0), so seed 0 would yield 0
// forever. Any nonzero constant works; this one is the 64-bit golden ratio.
constexpr std::uint64_t kZeroSeedReplacement = 0x9E3779B97F4A7C15ull;
constexpr std::uint64_t kXorshiftMultiplier = 0x2545F4914F6CDD1Dull;
}  // namespace

Rng::Rng(std::uint64_t seed) : state_(seed == 0 ? kZeroSeedReplacement : seed) {}

std::uint32_t Rng::next_u32() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  // The multiply scrambles the state; its high bits are the best mixed, so we keep those.
  return static_cast<std::uint32_t>((state_ * kXorshiftMultiplier) >> 32);
}

float Rng::next_f32() {
  // 24 random bits fill a float's mantissa exactly, so every value k / 2^24 is representable
  // and the result is strictly below 1 (using all 32 bits would round some values up to 1.0f).
  return static_cast<float>(next_u32() >> 8) / 16777216.0f;
}

// ---------------------------------------------------------------------------------------------
// The steps
// ---------------------------------------------------------------------------------------------

void apply_penalties(std::span<float> logits, std::span<const int> history,
                     const SamplingParams& params) {
  std::vector<int> scratch;
  apply_penalties(logits, history, params, scratch);
}

void apply_penalties(std::span<float> logits, std::span<const int> history,
                     const SamplingParams& params, std::vector<int>& scratch) {
  const long vocab = static_cast<long>(logits.size());
  for (int id : history) {
    if (id < 0 || id >= vocab) {
      throw Error(fmt::format("sampling: history token id {} is outside the vocabulary [0, {})", id,
                              vocab));
    }
  }
  const bool repetition = params.repetition_penalty != 1.0f;
  const bool additive = params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
  if (history.empty() || (!repetition && !additive)) return;

  // Sorting a copy groups equal ids into runs: one pass then sees each distinct id once with
  // its count, in O(h log h) for a history of h tokens and without a vocabulary-sized table.
  std::vector<int>& ids = scratch;
  ids.assign(history.begin(), history.end());
  std::sort(ids.begin(), ids.end());
  for (std::size_t begin = 0; begin < ids.size();) {
    std::size_t end = begin;
    while (end < ids.size() && ids[end] == ids[begin]) ++end;
    const int id = ids[begin];
    const float count = static_cast<float>(end - begin);
    float& z = logits[static_cast<std::size_t>(id)];
    // Step 1 then step 2 for this token. Tokens do not interact here, so doing both per token
    // is the same as doing step 1 for all tokens and then step 2 for all.
    if (repetition) {
      if (z > 0.0f) {
        z /= params.repetition_penalty;
      } else if (z < 0.0f) {
        z *= params.repetition_penalty;
      }  // a logit of exactly 0 is left alone: neither rule makes it less likely
    }
    z -= count * params.frequency_penalty + params.presence_penalty;  // count > 0 here
    begin = end;
  }
}

int argmax(std::span<const float> logits) {
  if (logits.empty()) throw Error("sampling: argmax of an empty logit vector");
  int best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    // Strictly greater: on a tie the earlier (lower) id stays.
    if (logits[i] > logits[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
  }
  return best;
}

void softmax_with_temperature(std::span<float> logits, float temperature) {
  if (!(temperature > 0.0f)) {
    throw Error(fmt::format("sampling: softmax temperature must be > 0, got {}", temperature));
  }
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(max_logit)) {
    // -inf: every token is masked, nothing can be drawn. +inf: the distribution is undefined.
    throw Error(fmt::format("sampling: the largest logit is {}, softmax is undefined", max_logit));
  }
  // softmax(z / T) is unchanged by subtracting a constant from every z / T; subtracting the
  // max makes every exponent <= 0, so exp cannot overflow and the largest term is exactly 1.
  // The shifted row's max is exactly 0, so the kernel's own max subtraction changes no bit.
  for (float& z : logits) z = (z - max_logit) / temperature;  // -inf (masked) stays -inf: p = 0
  kernels::softmax_cpu(logits.data(), 1, static_cast<int>(logits.size()));
}

namespace {
/// Token ids ordered by probability, highest first, into @p order; equal probabilities keep the
/// lower id first so that every tie-break in the filters is deterministic and documented.
void ids_by_probability(std::span<const float> probs, std::vector<int>& order) {
  order.resize(probs.size());
  std::iota(order.begin(), order.end(), 0);
  // A total order (ties broken by id), so std::sort gives what a stable sort of 0..V-1 would,
  // without the temporary buffer std::stable_sort allocates.
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const float pa = probs[static_cast<std::size_t>(a)], pb = probs[static_cast<std::size_t>(b)];
    return pa > pb || (pa == pb && a < b);
  });
}
}  // namespace

void top_k_filter(std::span<float> probs, int k) {
  std::vector<int> scratch;
  top_k_filter(probs, k, scratch);
}

void top_k_filter(std::span<float> probs, int k, std::vector<int>& order) {
  if (k <= 0 || static_cast<std::size_t>(k) >= probs.size()) return;  // off, or keeps all
  // Order by (probability descending, id ascending): a strict total order, so the k-th token
  // is unique, and selecting it is O(V). A token is kept exactly when it comes before it or is it.
  auto before = [&](int a, int b) {
    const float pa = probs[static_cast<std::size_t>(a)], pb = probs[static_cast<std::size_t>(b)];
    return pa > pb || (pa == pb && a < b);
  };
  order.resize(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
  const int kth = order[static_cast<std::size_t>(k - 1)];
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const int id = static_cast<int>(i);
    if (id != kth && !before(id, kth)) probs[i] = 0.0f;
  }
}

void min_p_filter(std::span<float> probs, float min_p) {
  if (min_p <= 0.0f || probs.empty()) return;
  const float p_max = *std::max_element(probs.begin(), probs.end());
  // The threshold scales with the top probability: strict when the model is confident, loose
  // when it is not. Computed in double, with the boundary slack explained in the header.
  const double threshold =
      static_cast<double>(min_p) * p_max * (1.0 - static_cast<double>(kBoundarySlack));
  for (float& p : probs) {
    if (p < threshold) p = 0.0f;
  }
}

void top_p_filter(std::span<float> probs, float top_p) {
  std::vector<int> scratch;
  top_p_filter(probs, top_p, scratch);
}

void top_p_filter(std::span<float> probs, float top_p, std::vector<int>& order) {
  if (top_p >= 1.0f || probs.empty()) return;
  // Measuring against the current total is renormalising without dividing (see file comment).
  const double total = std::accumulate(probs.begin(), probs.end(), 0.0);
  const double threshold =
      static_cast<double>(top_p) * total * (1.0 - static_cast<double>(kBoundarySlack));
  ids_by_probability(probs, order);
  double mass = 0.0;
  std::size_t kept = 0;
  // Keep tokens until the mass kept so far reaches the threshold. The token that crosses it is
  // kept: without it the kept mass would be below top_p, so the set would be too small.
  while (kept < order.size() && mass < threshold) {
    mass += probs[static_cast<std::size_t>(order[kept])];
    ++kept;
  }
  for (std::size_t i = kept; i < order.size(); ++i) {
    probs[static_cast<std::size_t>(order[i])] = 0.0f;
  }
}

int sample_from(std::span<const float> probs, float u) {
  const double total = std::accumulate(probs.begin(), probs.end(), 0.0);
  if (!(total > 0.0)) throw Error("sampling: cannot draw, every probability is zero");
  // Inverse-CDF sampling: the first index whose cumulative mass exceeds u * total. A token of
  // mass 0 does not raise the CDF, so it can never be the first to exceed the target.
  const double target = static_cast<double>(u) * total;
  double cdf = 0.0;
  int last_nonzero = -1;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0f) continue;
    cdf += probs[i];
    last_nonzero = static_cast<int>(i);
    if (cdf > target) return last_nonzero;
  }
  // Round-off: summing in another order can leave the final cdf a hair below u * total when u
  // is close to 1. The draw then belongs to the last token that has any mass.
  return last_nonzero;
}

// ---------------------------------------------------------------------------------------------
// Sampler
// ---------------------------------------------------------------------------------------------

Sampler::Sampler(const SamplingParams& params, int vocab_size)
    : params_(params), vocab_size_(vocab_size), rng_(params.seed) {
  params_.validate();
  if (vocab_size <= 0) {
    throw Error(fmt::format("sampling: vocab_size must be > 0, got {}", vocab_size));
  }
  work_.reserve(static_cast<std::size_t>(vocab_size));
  order_.reserve(static_cast<std::size_t>(vocab_size));
}

int Sampler::prepare(std::span<const float> logits, std::span<const int> history) {
  if (logits.size() != static_cast<std::size_t>(vocab_size_)) {
    throw Error(
        fmt::format("sampling: got {} logits for a vocabulary of {}", logits.size(), vocab_size_));
  }
  // A NaN would silently poison the softmax (and argmax would skip it), so refuse it here.
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) throw Error(fmt::format("sampling: logit {} is NaN", i));
  }
  work_.assign(logits.begin(), logits.end());
  apply_penalties(work_, history, params_, order_);  // also checks the history ids
  if (params_.greedy()) return argmax(work_);
  softmax_with_temperature(work_, params_.temperature);
  top_k_filter(work_, params_.top_k, order_);
  min_p_filter(work_, params_.min_p);
  top_p_filter(work_, params_.top_p, order_);
  return -1;
}

int Sampler::sample(std::span<const float> logits, std::span<const int> history) {
  const int greedy_token = prepare(logits, history);
  if (greedy_token >= 0) return greedy_token;
  // sample_from works on unnormalised mass, so step 7's renormalisation is implicit here.
  return sample_from(work_, rng_.next_f32());
}

std::vector<float> Sampler::distribution(std::span<const float> logits,
                                         std::span<const int> history) {
  const int greedy_token = prepare(logits, history);
  if (greedy_token >= 0) {
    std::vector<float> one_hot(static_cast<std::size_t>(vocab_size_), 0.0f);
    one_hot[static_cast<std::size_t>(greedy_token)] = 1.0f;
    return one_hot;
  }
  const double total = std::accumulate(work_.begin(), work_.end(), 0.0);
  std::vector<float> probs(work_.size());
  for (std::size_t i = 0; i < work_.size(); ++i) {
    probs[i] = static_cast<float>(work_[i] / total);
  }
  return probs;
}

}  // namespace inferlab
