#pragma once
/// @file format_compare.hpp
/// @brief Chapter 09's measurements: one model stored in several weight formats, side by side.
/// Per format the bytes it holds, its speed (batch-1 and batch-16 decode, prefill) with each
/// workload placed on this machine's roofline by the bytes it really reads, and its quality
/// against the float32 model (quant_quality.hpp). The chapter loads the models; this file only
/// measures them.

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "inferlab/analysis/model_points.hpp"
#include "inferlab/analysis/quant_quality.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief One model of the comparison: its weights in one format.
struct FormatModel {
  std::string name;    ///< how the chapter names the format ("f32", "q8_0", "file (Q4_1)")
  const Model* model;  ///< the loaded model (the same shapes as the reference)
};

/// @brief The weight bytes @p model holds as stored: its linear layers and classifier (as the
/// CPU forward pass reads them), the embedding table when it is not the classifier, and the
/// float32 norms.
/// @note An untied embedding table is counted at the classifier's bytes per weight (the same
/// (V, D) shape, stored in the same format).
double stored_weight_bytes(const Model& model);

/// @brief What chapter 09 measures of one format.
struct FormatMeasurement {
  std::string name;              ///< FormatModel::name
  double model_bytes = 0.0;      ///< stored_weight_bytes()
  double bits_per_weight = 0.0;  ///< 8 x model_bytes / n_params (norms and scales included)
  /// Prefill and decode at B = 1 and B = 16 (measure_model_points()), each point's bytes
  /// counted with the weights as stored: a step reads model_bytes of weights, not 4 per weight.
  ModelPoints points;
  QualityStats quality;  ///< against the reference, on the text (compare_quality())
  /// Per prompt of the comparison, the first generated position where this format's greedy
  /// output departs from the reference's (0 = its first token; -1: never, within the steps).
  /// A prompt that encodes to no token (empty, and a tokenizer without BOS) is left out.
  std::vector<int> greedy_divergence;
};

/// @brief What compare_formats() runs.
struct FormatCompareOptions {
  ModelPointOptions speed;  ///< the timed workloads (batches {1, 16} by default)
  int window = 256;       ///< quality windows in tokens (compare_quality()), clipped to the context
  /// When positive: score the text in llama-perplexity's chunks of this many tokens instead of
  /// windows (compare_quality_chunks()), to compare with `llama-perplexity -c` on the same text
  int ppl_chunk = 0;
  int greedy_steps = 64;  ///< tokens each greedy generation may add to its prompt
  /// Called with one line before each measurement (the chapter prints it to stderr).
  std::function<void(const std::string&)> progress;
  FormatCompareOptions() { speed.batches = {1, 16}; }  ///< B = 1 and B = 16
};

/// @brief Measures every model of @p formats: speed, bytes, and quality against @p reference
/// on @p text (tokenized with BOS per window) and on the greedy continuations of @p prompts.
/// @param reference the float32 model the quality is measured against
/// @param formats the models to measure (the reference may be one of them)
/// @param tokenizer the models' tokenizer
/// @param text the text of the perplexity and KL measures (quality_text() by default)
/// @param prompts the prompts of the greedy comparison
/// @param options workloads and sizes
/// @return one FormatMeasurement per entry of @p formats, in order
/// @throws inferlab::Error as measure_model_points() and compare_quality() do.
std::vector<FormatMeasurement> compare_formats(const Model& reference,
                                               std::span<const FormatModel> formats,
                                               const Tokenizer& tokenizer, const std::string& text,
                                               const std::vector<std::string>& prompts,
                                               const FormatCompareOptions& options);

/// @brief The measured points of @p runs for chapter 03's roofline plot: per format its batch-1
/// and batch-16 decode, labelled "q8_0 B=1", ... at the intensity of the bytes it reads.
std::vector<RooflinePoint> format_roofline_points(const std::vector<FormatMeasurement>& runs);

}  // namespace inferlab
