#pragma once
/// @file analysis_json.hpp
/// @brief The `--json` form of the analysis results: chapter 02's KV cache measurements and
/// sizing, chapter 03's roofline report. One to_json() per result struct; a chapter adds only
/// its own keys (the chapter's name, the flags it echoes). Field names are a contract read
/// outside the repository: they change only with the chapters' documentation.

#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/analysis/kv_sizing.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/analysis/roofline_report.hpp"

namespace inferlab {

/// @brief dtype, predicted and allocated bytes per token, and whether they are equal.
nlohmann::json to_json(const KVPredictionCheck& check);

/// @brief config, context_tokens and one row per number format (bytes per token and per
/// sequence, the one-GPU fit, the GPUs and sequences that fit).
nlohmann::json to_json(const KVSizingTable& table);

/// @brief One object per position: naive and cached step times, their spreads, and whether the
/// logits were identical.
nlohmann::json to_json(const std::vector<StepLatency>& steps);

/// @brief One object per KV storage type: the logit differences and changed tokens against f32.
nlohmann::json to_json(const std::vector<KVQuality>& quality);

/// @brief Chapter 03's report: the config, the hardware, the linear layers' intensities, decode
/// attention, the memory fit, the decode bound, the critical batch, the prefill, the textbook
/// numbers and, for a measured machine, its measurements (null otherwise). A critical batch that
/// does not exist (never compute-bound) is null: JSON has no infinity.
nlohmann::json to_json(const RooflineReport& report);

}  // namespace inferlab
