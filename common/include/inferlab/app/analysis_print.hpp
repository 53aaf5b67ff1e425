#pragma once
/// @file analysis_print.hpp
/// @brief The longer tables of the analysis chapters, printed to stdout: chapter 02's KV storage
/// comparison and KV sizing of a named model, chapter 03's linear-layer intensities and
/// measurements of this machine. The chapters print their lesson
/// themselves and call these for the tables they share with nothing else.

#include <string>
#include <vector>

#include "inferlab/analysis/kv_sizing.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/analysis/roofline_report.hpp"

namespace inferlab {

/// @brief A critical batch as a table shows it: "12" or "none (never compute-bound)" for +inf.
std::string critical_batch_text(double batch);

/// @brief Chapter 02's `--compare-kv` table: for each KV storage type, its bytes per token, the
/// logit differences against f32 (teacher-forced) and the greedy tokens that changed.
void print_kv_quality(const std::vector<KVQuality>& quality);

/// @brief Chapter 02's `--kv-calc` table: bytes per token and per sequence in every number
/// format, the sequences that fit on the fewest 80 GB GPUs holding the bf16 weights, and a note
/// when one bf16 sequence and the weights exceed one 80 GB GPU.
void print_kv_sizing(const KVSizingTable& table);

/// @brief Chapter 03's table of the linear layers' arithmetic intensity against the tokens in
/// the batch, each row marked memory- or compute-bound, and what the intensity grows with.
void print_linear_intensity(const RooflinePrediction& prediction);

/// @brief Chapter 03's "this machine, per thread count" table (read bandwidth, FMA peak and
/// Eigen's GEMM at each thread count).
void print_thread_roofs(const MachineRoofline& measured);

/// @brief Chapter 03's measured section: the core's kernels on the measured roofline (with a
/// note for any above its roof), the batch sweep of one linear layer with the empirical and
/// formula critical batch, and the whole model's prefill and decode points (or why they were
/// not measured).
/// @param report a report with measurements (report.measured set)
void print_measured_roofline(const RooflineReport& report);

}  // namespace inferlab
