#pragma once
/// @file bench_report.hpp
/// @brief bench_serving's output: the result block `vllm bench serve` prints, with its labels,
/// and the same numbers as JSON under vLLM's keys (`mean_ttft_ms`, `p99_itl_ms`, ...).

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "inferlab/serving/bench_client.hpp"

namespace inferlab {

/// @brief Prints @p m as `vllm bench serve` does: counts, duration, token totals, throughputs
/// (and goodput when an SLO is set), then Mean / Median / P90 / P99 of TTFT, TPOT, ITL and E2EL
/// in milliseconds.
/// @param m the run's metrics
/// @param max_concurrency the client's concurrency cap (0: none)
/// @param request_rate the workload's mean arrival rate, requests / s (<= 0: all at once)
void print_bench_metrics(const BenchMetrics& m, int max_concurrency, double request_rate);

/// @brief vLLM's result keys: duration, completed, failed (with our disconnected and rejected),
/// total_input_tokens, total_output_tokens, request_throughput, request_goodput (null without
/// an SLO), output_throughput, total_token_throughput, max_concurrent_requests and, for ttft,
/// tpot, itl and e2el, mean_X_ms, median_X_ms, std_X_ms, p50_X_ms, p90_X_ms, p99_X_ms.
nlohmann::json to_json(const BenchMetrics& m);

/// @brief One request as the client saw it: id, outcome, http_status, finish_reason, text,
/// prompt_tokens, output_tokens, ttft_ms, e2el_ms (null without text) and error.
nlohmann::json to_json(const ClientRecord& r);

}  // namespace inferlab
