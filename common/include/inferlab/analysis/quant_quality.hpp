#pragma once
/// @file quant_quality.hpp
/// @brief What storing the weights in fewer bits costs in output quality (chapter 09), measured
/// against a reference model (float32) on the same text: the KL divergence of each position's
/// next-token distribution, the share of positions whose most likely token is unchanged, the
/// perplexity of an English text, and where a greedy generation first departs from the
/// reference's. These are the measures of llama.cpp's `llama-perplexity --kl-divergence`.
///
/// Notation: V the vocabulary size; P = softmax(reference logits), Q = softmax(the quantized
/// model's logits) at one position; logs are natural (nats).

#include <span>
#include <string>
#include <vector>

#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief KL(P || Q) = sum_i P_i (log P_i - log Q_i) for P = softmax(@p reference), Q =
/// softmax(@p test), in double, through log-softmax (no overflow for any finite logits).
/// @param reference (V) the reference model's logits
/// @param test (V) the compared model's logits at the same position
/// @return the divergence in nats (>= 0; exactly 0 when the logits are equal)
/// @throws inferlab::Error if the sizes differ or are 0.
double kl_divergence(std::span<const float> reference, std::span<const float> test);

/// @brief -log softmax(@p logits)[@p token], in double: the token's cross-entropy.
/// @throws inferlab::Error if @p token is outside [0, V).
double negative_log_likelihood(std::span<const float> logits, int token);

/// @brief The most likely token: the argmax of @p logits, the lowest id on a tie (the greedy
/// sampler's rule).
/// @throws inferlab::Error for empty logits.
int top_token(std::span<const float> logits);

/// @brief The quality measures of one model against the reference over a text.
struct QualityStats {
  int positions = 0;            ///< next-token predictions compared
  double kl_mean = 0.0;         ///< mean KL(P || Q) over the positions, nats
  double kl_p99 = 0.0;          ///< its 99th percentile (linear interpolation, metrics.hpp)
  double top1_agreement = 0.0;  ///< share of positions where top_token(Q) == top_token(P)
  /// exp(mean over positions of -log Q(next token of the text)): the model's perplexity
  double perplexity = 0.0;
};

/// @brief Collects QualityStats one position at a time.
class QualityAccumulator {
 public:
  /// @brief Adds one position.
  /// @param reference (V) the reference model's logits
  /// @param test (V) the compared model's logits
  /// @param next_token the text's token at the next position (scored by the perplexity)
  /// @throws inferlab::Error as kl_divergence() and negative_log_likelihood() do.
  void add(std::span<const float> reference, std::span<const float> test, int next_token);
  /// @brief The measures over the positions added so far (all 0 before the first).
  QualityStats stats() const;

 private:
  std::vector<double> kl_;  // one per position
  int agree_ = 0;
  double nll_sum_ = 0.0;
};

/// @brief Teacher-forced comparison of @p models against @p reference on one text.
///
/// The text's tokens are cut into consecutive runs of up to `window - 1` tokens. Each run is
/// scored from a fresh cache (CPU runner, float32 KV cache) by forwarding @p bos and the run
/// but its last token through the reference and every model: the logits row after @p bos
/// predicts the run's first token, the row after its token r its token r + 1. Every token of
/// the text is scored once; the windows bound the context, so the numbers depend on the
/// window (as llama-perplexity's on its -c).
/// @param reference the model the others are compared with (float32 weights)
/// @param models the models to measure (the reference itself may be one: KL 0, agreement 1)
/// @param tokens (N) the text's ids without BOS, N >= 1
/// @param bos the id each window starts with (the tokenizer's BOS); -1: none, then each window
///        starts with the token before its run instead, and the text's first token is not
///        scored
/// @param window tokens per window, @p bos and the last predicted token included, in [2, the
///        models' context + 1]
/// @return one QualityStats per model, in order
/// @throws inferlab::Error if the models' shapes or vocabularies differ, @p window is out of
/// range, or an id is outside [0, V).
/// @note Cost: one forward of every token through every model (and the reference), plus
/// O(N V) per model for the log-softmaxes; only one window's logits are held at a time.
std::vector<QualityStats> compare_quality(const Model& reference,
                                          std::span<const Model* const> models,
                                          std::span<const int> tokens, int bos, int window);

/// @brief compare_quality() in the chunks of llama.cpp's `llama-perplexity -c N` (also with
/// `--kl-divergence`), so that both engines score the same positions of the same tokens.
///
/// The text, with @p bos first when there is one (llama-perplexity tokenizes with BOS when
/// the tokenizer adds it), is cut into consecutive chunks of @p chunk tokens; a tail shorter
/// than a chunk is left out. Each chunk is forwarded from a fresh cache with its first token
/// replaced by @p bos (when there is one), and only its second half is scored: the rows
/// r in [chunk / 2, chunk - 1) predict its tokens r + 1, each with at least half a chunk of
/// context.
/// @param reference the model the others are compared with (float32 weights)
/// @param models the models to measure
/// @param tokens (N) the text's ids without BOS
/// @param bos the tokenizer's BOS id, or -1 when it adds none
/// @param chunk tokens per chunk (llama-perplexity's -c), in [3, the models' context + 1]
/// @return one QualityStats per model, in order: (N (+1 with BOS)) / chunk chunks of
///         chunk - 1 - chunk / 2 positions
/// @throws inferlab::ParameterError on parameter `chunk` when @p chunk is out of range or
/// longer than the text; inferlab::Error as compare_quality() otherwise.
/// @note Cost: as compare_quality(), though only about half the forwarded rows are scored.
std::vector<QualityStats> compare_quality_chunks(const Model& reference,
                                                 std::span<const Model* const> models,
                                                 std::span<const int> tokens, int bos,
                                                 int chunk);

/// @brief The first index where two greedy sequences differ: `min(size)` when one is a prefix
/// of the other and the sizes differ, -1 when they are equal.
int first_divergence(std::span<const int> reference, std::span<const int> test);

/// @brief The fixed English text of the perplexity measurement: chapter 1 of Jane Austen's
/// *Pride and Prejudice* (1813; public domain), 4,475 characters, as in Project Gutenberg's
/// eBook #1342 in its 2008 plain-ASCII edition (straight quotes), one line per paragraph.
const std::string& quality_text();

/// @brief Where quality_text() comes from, in one line, for reports.
const char* quality_text_source();

}  // namespace inferlab
