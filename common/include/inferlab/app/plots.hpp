#pragma once
/// @file plots.hpp
/// @brief The chapters' pictures of core results: step latency (chapter 02), the roofline
/// (chapter 03), KV memory over time and block tables (chapter 05), TTFT distributions and the
/// radix trie (chapter 06), speculative decoding's speed-up against K and against the batch
/// (chapter 07). The core computes the numbers; these functions only draw them.

#include <string>
#include <vector>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/analysis/speculative_compare.hpp"
#include "inferlab/analysis/speculative_sim.hpp"
#include "inferlab/app/svg.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/prefix_report.hpp"

namespace inferlab {

/// @brief Chapter 02's step time against the position (log time axis): the naive step, which
/// re-forwards the whole sequence, and the cached step, which forwards one token.
/// @param steps the timed positions (compare_step_latency())
/// @param model the model's name, for the title
SvgPlot step_latency_plot(const std::vector<StepLatency>& steps, const std::string& model);

/// @brief A log-log roofline of @p hardware: the memory roof up to the ridge, the compute roof
/// from it, the ridge marked, and the points labelled (analytic: hollow colour; measured:
/// another colour). Axes in FLOP/byte and GFLOP/s (TFLOP/s for a machine above 10 TFLOP/s).
SvgPlot roofline_plot(const Hardware& hardware, const std::vector<RooflinePoint>& points,
                      const std::string& title);

/// @brief KV memory reserved and used over time, one pair of lines per run, against the budget.
SvgPlot kv_memory_plot(const std::vector<const EngineRun*>& runs, const std::string& title);

/// @brief The block tables of @p snapshot as a grid: one row per sequence, one cell per
/// logical block, labelled with its physical block (at most @p max_rows rows; the title says
/// how many were left out, and how scattered the tables are).
SvgPlot block_table_plot(const BlockTableSnapshot& snapshot, int block_size, int max_rows = 8);

/// @brief Writes several plots into one SVG file, one above the other.
/// @throws inferlab::Error if the file cannot be written.
void save_stacked(const std::string& path, const std::vector<const SvgPlot*>& plots);

/// @brief TTFT's distribution (empirical CDF, log time axis) of each run, one line per cache.
SvgPlot ttft_cdf_plot(const std::vector<const EngineRun*>& runs, const std::string& title);

/// @brief Chapter 06's picture, written to @p path: the TTFT distributions of @p runs (titled
/// @p title) and, below it, the radix trie of the last run that kept one.
/// @throws inferlab::Error if the file cannot be written.
void save_prefix_plots(const std::string& path, const std::vector<EngineRun>& runs,
                       const std::string& title);

/// @brief The radix trie drawn as a tree: one box per node (at most @p max_nodes, breadth
/// first), labelled with its tokens and hits, its width proportional to log(tokens).
SvgPlot trie_plot(const std::vector<TrieNodeView>& trie, const std::string& title,
                  int max_nodes = 40);

/// @brief Speed-up over plain decoding against K, one measured (solid) and one predicted
/// (dashed) line per proposer of @p runs, and plain decoding's 1 (chapter 07).
/// @param runs the measured runs (compare_proposers())
/// @param model the target's name, for the title
SvgPlot speedup_vs_k_plot(const std::vector<ProposerRun>& runs, const std::string& model);

/// @brief Simulated speed-up against the batch (log scale), one line per K of @p sweep, and
/// plain decoding's 1 (chapter 07's --clock sim).
/// @param sweep the simulation (simulate_k_sweep())
/// @param title the plot's title
SvgPlot speculation_batch_plot(const SpecSimSweep& sweep, const std::string& title);

}  // namespace inferlab
