#pragma once
/// @file model_points.hpp
/// @brief Whole-model workloads timed on this CPU and placed against its roofs: batch-1 decode
/// (bound by the weight stream), a prompt's prefill and batched decode (bound, as the batch
/// grows, by the FMA units). Used by bench_cpu_roofline and chapter 03.

#include <functional>
#include <string>
#include <vector>

#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief One measured workload: a forward step of a model, counted the way the roofline counts.
struct ModelPoint {
  std::string name;    ///< e.g. "decode B=1", "prefill 512", "decode B=16"
  int tokens = 0;      ///< tokens one step processes (B for decode, the prompt for prefill)
  double flops = 0.0;  ///< FLOPs of one step: 2 per weight per token, plus attention
  double bytes = 0.0;  ///< bytes one step must read at least: every weight once, plus the KV cache
  double seconds = 0.0;  ///< median time of one step over the repetitions
  /// @brief tokens / seconds (0 if the time is 0).
  double tokens_per_second() const { return seconds > 0.0 ? tokens / seconds : 0.0; }
  /// @brief FLOP per byte (0 when nothing is moved).
  double intensity() const { return bytes > 0.0 ? flops / bytes : 0.0; }
  /// @brief Achieved FLOP/s (0 if the time is 0).
  double flops_per_second() const { return seconds > 0.0 ? flops / seconds : 0.0; }
  /// @brief Achieved bytes/s (0 if the time is 0).
  double bytes_per_second() const { return seconds > 0.0 ? bytes / seconds : 0.0; }
};

/// @brief What measure_model_points() runs.
struct ModelPointOptions {
  int prompt_tokens = 512;                           ///< prefill length (>= 1)
  std::vector<int> batches{1, 2, 4, 8, 16, 32, 64};  ///< decode batch sizes (ascending, from 1)
  int decode_steps = 16;  ///< decode steps per repetition (the context grows by this much)
  int reps = 5;           ///< repetitions of each workload; the median counts (>= 1)
  /// Called with one line before each workload (bench and chapter print it to stderr).
  std::function<void(const std::string&)> progress;
};

/// @brief The measurements: prefill, then decode at every batch size (batched[0] is B = 1).
struct ModelPoints {
  ModelPoint prefill;               ///< one forward of prompt_tokens tokens on a fresh cache
  std::vector<ModelPoint> batched;  ///< one per batch size in ModelPointOptions::batches
};

/// @brief FLOPs of one forward step over tokens at positions @p first_pos .. first_pos + T - 1
/// of one sequence (T = @p tokens) with @p logit_rows rows through the classifier: 2 per weight
/// of the layers' matrices per token, 2 per classifier weight per logit row, and attention's
/// q.k and p.v (4 D per cached position per layer).
/// @return the FLOP count.
double forward_flops(const ModelConfig& config, int tokens, int first_pos, int logit_rows);

/// @brief Times @p model's forward pass on this machine with the current OpenMP threads, through
/// the CPU model runner: a prefill of prompt_tokens (run_sequence), and decode steps of B
/// sequences (one ModelRunner::step of B one-token entries) for every B. Float32 KV cache.
/// @throws inferlab::Error for bad options (prompt longer than the context, batches not
/// ascending from 1, reps < 1).
/// @note Cost: about reps x (one prefill + decode_steps x sum(batches) tokens) forward tokens.
ModelPoints measure_model_points(const Model& model, const ModelPointOptions& options = {});

}  // namespace inferlab
