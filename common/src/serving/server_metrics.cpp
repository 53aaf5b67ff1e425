// The server's metrics and their Prometheus text.
#include "inferlab/serving/server_metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace inferlab {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

std::vector<double> latency_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

namespace {

void write_metric(std::string& out, const char* name, const char* type, const char* help,
                  const std::string& labels, double value) {
  out += fmt::format("# HELP inferlab:{} {}\n# TYPE inferlab:{} {}\ninferlab:{}{{{}}} {}\n", name,
                     help, name, type, name, labels, value);
}

void write_histogram(std::string& out, const char* name, const char* help,
                     const std::string& labels, const Histogram& h) {
  out += fmt::format("# HELP inferlab:{} {}\n# TYPE inferlab:{} histogram\n", name, help, name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.counts().size(); ++i) {
    cumulative += h.counts()[i];
    const std::string le = i < h.bounds().size() ? fmt::format("{}", h.bounds()[i]) : "+Inf";
    out += fmt::format("inferlab:{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, cumulative);
  }
  out += fmt::format("inferlab:{}_sum{{{}}} {}\ninferlab:{}_count{{{}}} {}\n", name, labels,
                     h.sum(), name, labels, h.count());
}

}  // namespace

std::string prometheus_text(const ServerMetrics& m, const std::string& model_name) {
  std::string out;
  const std::string l = fmt::format("model_name=\"{}\"", model_name);
  write_metric(out, "num_requests_running", "gauge", "Sequences in the running batch.", l,
               m.requests_running);
  write_metric(out, "num_requests_waiting", "gauge", "Sequences waiting for admission.", l,
               m.requests_waiting);
  write_metric(out, "kv_blocks_used", "gauge", "KV blocks held by live sequences.", l,
               double(m.kv_blocks_used));
  write_metric(out, "kv_blocks_total", "gauge", "KV blocks in the pool.", l,
               double(m.kv_blocks_total));
  write_metric(out, "kv_blocks_cached", "gauge", "KV blocks kept by the prefix cache.", l,
               double(m.kv_blocks_cached));
  write_metric(out, "prefix_cache_queries_total", "counter",
               "Prompt tokens looked up in the prefix cache.", l, double(m.prefix_cache_queries));
  write_metric(out, "prefix_cache_hits_total", "counter",
               "Prompt tokens found in the prefix cache.", l, double(m.prefix_cache_hits));
  write_metric(out, "prompt_tokens_total", "counter", "Prompt tokens of admitted sequences.", l,
               double(m.prompt_tokens));
  write_metric(out, "generation_tokens_total", "counter", "Tokens generated.", l,
               double(m.generation_tokens));
  write_metric(out, "engine_steps_total", "counter", "Engine steps run.", l, double(m.steps));
  write_metric(out, "request_rejected_total", "counter", "Requests refused: queue full.", l,
               double(m.rejected_queue_full));
  out += "# HELP inferlab:request_success_total Sequences finished, by finish reason.\n"
         "# TYPE inferlab:request_success_total counter\n";
  for (const auto& [reason, n] :
       {std::pair{"stop", m.finished_stop}, std::pair{"length", m.finished_length},
        std::pair{"cancelled", m.finished_cancelled}})
    out += fmt::format("inferlab:request_success_total{{{},finished_reason=\"{}\"}} {}\n", l,
                       reason, n);
  write_histogram(out, "time_to_first_token_seconds", "Arrival to first token.", l, m.ttft);
  write_histogram(out, "inter_token_latency_seconds", "Between consecutive tokens.", l,
                  m.inter_token);
  write_histogram(out, "e2e_request_latency_seconds", "Arrival to last token.", l, m.e2e);
  write_histogram(out, "request_queue_time_seconds", "Arrival to admission.", l, m.queue_time);
  return out;
}

}  // namespace inferlab
