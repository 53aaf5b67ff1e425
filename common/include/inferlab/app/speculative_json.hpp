#pragma once
/// @file speculative_json.hpp
/// @brief The JSON form of speculative decoding's results (chapter 07's --json): one
/// to_json() per core result struct. The field names are the chapter's output contract.

#include <nlohmann/json.hpp>

#include "inferlab/analysis/speculative_compare.hpp"
#include "inferlab/analysis/speculative_sim.hpp"

namespace inferlab {

/// @brief One proposer's run: name, k, acceptance (overall and per position), accepted tokens
/// per round, target forwards per token, tokens/s, measured and predicted speed-up, cost
/// ratios, generated tokens and whether they equal plain decoding's.
/// @param run a compare_proposers() run
/// @return the object the chapter lists under "proposers"
nlohmann::json to_json(const ProposerRun& run);

/// @brief The experiment: "tokens" (the first run's), "plain_tokens_per_s" and "proposers"
/// (to_json() of every run).
/// @param comparison a compare_proposers() result with at least one run
/// @return those three fields of the chapter's object
nlohmann::json to_json(const ProposerComparison& comparison);

/// @brief One simulated batch size: batch, the three step times, speed-up, and whether the
/// verification step is memory-bound.
/// @param point a simulate_speculation() point
/// @return the object the chapter lists under "points"
nlohmann::json to_json(const SpecSimPoint& point);

/// @brief One simulated K: k, break_even_batch (-1: none) and its points.
/// @param curve a simulate_k_sweep() curve
/// @return the object the chapter lists under "simulation"
nlohmann::json to_json(const SpecSimCurve& curve);

/// @brief The simulation: "context", "simulation" (to_json() of every curve) and "proposers",
/// one simulated draft per K in the shape of a measured run (its batch-1 point; no measured
/// speed-up).
/// @param sweep a simulate_k_sweep() result
/// @return those three fields of the chapter's object
nlohmann::json to_json(const SpecSimSweep& sweep);

}  // namespace inferlab
