// bench_serving's printed block and JSON, under the names `vllm bench serve` uses.
#include "inferlab/app/bench_report.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace inferlab {

namespace {

constexpr const char* kRule = "==================================================";

void print_row(const char* label, const std::string& value) {
  std::printf("%-40s %s\n", label, value.c_str());
}

void print_section(const char* title) {
  const int width = 50, pad = width - static_cast<int>(std::string(title).size());
  std::printf("%s%s%s\n", std::string(pad / 2, '-').c_str(), title,
              std::string(pad - pad / 2, '-').c_str());
}

void print_latency(const char* title, const char* name, const LatencyStats& s) {
  print_section(title);
  const std::pair<const char*, double> rows[] = {{"Mean", s.summary.mean},
                                                 {"Median", s.summary.p50},
                                                 {"P90", s.summary.p90},
                                                 {"P99", s.summary.p99}};
  for (const auto& [label, v] : rows)
    print_row(fmt::format("{} {} (ms):", label, name).c_str(), fmt::format("{:.2f}", v * 1e3));
}

}  // namespace

void print_bench_metrics(const BenchMetrics& m, int max_concurrency, double request_rate) {
  std::printf("%s\n", std::string(" Serving Benchmark Result ").insert(0, 12, '=').append(12, '=')
                          .c_str());
  print_row("Successful requests:", std::to_string(m.completed));
  print_row("Failed requests:", std::to_string(m.failed));
  if (m.rejected > 0) print_row("Rejected requests (429/503):", std::to_string(m.rejected));
  if (m.disconnected > 0) print_row("Disconnected by the client:", std::to_string(m.disconnected));
  if (max_concurrency > 0)
    print_row("Maximum request concurrency:", std::to_string(max_concurrency));
  print_row("Request rate configured (RPS):",
            request_rate > 0 ? fmt::format("{:.2f}", request_rate) : "inf");
  print_row("Benchmark duration (s):", fmt::format("{:.2f}", m.duration));
  print_row("Total input tokens:", std::to_string(m.input_tokens));
  print_row("Total generated tokens:", std::to_string(m.output_tokens));
  print_row("Request throughput (req/s):", fmt::format("{:.2f}", m.request_throughput));
  if (m.slo.set) print_row("Request goodput (req/s):", fmt::format("{:.2f}", m.request_goodput));
  print_row("Output token throughput (tok/s):", fmt::format("{:.2f}", m.output_throughput));
  print_row("Peak concurrent requests:", std::to_string(m.peak_concurrency));
  print_row("Total Token throughput (tok/s):", fmt::format("{:.2f}", m.total_token_throughput));
  print_latency("Time to First Token", "TTFT", m.ttft);
  print_latency("Time per Output Token (excl. 1st token)", "TPOT", m.tpot);
  print_latency("Inter-token Latency", "ITL", m.itl);
  print_latency("End-to-end Latency", "E2EL", m.e2el);
  std::printf("%s\n", kRule);
}

nlohmann::json to_json(const BenchMetrics& m) {
  nlohmann::json j = {{"duration", m.duration},
                      {"completed", m.completed},
                      {"failed", m.failed},
                      {"rejected", m.rejected},
                      {"disconnected", m.disconnected},
                      {"total_input_tokens", m.input_tokens},
                      {"total_output_tokens", m.output_tokens},
                      {"request_throughput", m.request_throughput},
                      {"request_goodput", nullptr},
                      {"output_throughput", m.output_throughput},
                      {"total_token_throughput", m.total_token_throughput},
                      {"max_concurrent_requests", m.peak_concurrency}};
  if (m.slo.set) j["request_goodput"] = m.request_goodput;
  const std::pair<const char*, const LatencyStats*> metrics[] = {
      {"ttft", &m.ttft}, {"tpot", &m.tpot}, {"itl", &m.itl}, {"e2el", &m.e2el}};
  for (const auto& [name, s] : metrics) {
    const std::string n = name;
    j["mean_" + n + "_ms"] = s->summary.mean * 1e3;
    j["median_" + n + "_ms"] = s->summary.p50 * 1e3;
    j["std_" + n + "_ms"] = s->std * 1e3;
    j["p50_" + n + "_ms"] = s->summary.p50 * 1e3;
    j["p90_" + n + "_ms"] = s->summary.p90 * 1e3;
    j["p99_" + n + "_ms"] = s->summary.p99 * 1e3;
  }
  return j;
}

nlohmann::json to_json(const ClientRecord& r) {
  nlohmann::json j = {{"id", r.id},
                      {"outcome", client_outcome_name(r.outcome)},
                      {"http_status", r.http_status},
                      {"finish_reason", r.finish_reason},
                      {"text", r.text},
                      {"prompt_tokens", r.prompt_tokens},
                      {"output_tokens", r.output_tokens()},
                      {"ttft_ms", nullptr},
                      {"e2el_ms", nullptr},
                      {"error", r.error}};
  if (!r.chunk_times.empty()) {
    j["ttft_ms"] = (r.chunk_times.front() - r.sent) * 1e3;
    j["e2el_ms"] = (r.chunk_times.back() - r.sent) * 1e3;
  }
  return j;
}

}  // namespace inferlab
