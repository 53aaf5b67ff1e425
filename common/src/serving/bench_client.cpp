/// @file bench_client.cpp
/// @brief A benchmark client's logic without the network: request bodies, streamed chunks,
/// per-request records and the `vllm bench serve` metrics.

#include "inferlab/serving/bench_client.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/workload.hpp"

namespace inferlab {

ApiEndpoint parse_api_endpoint(const std::string& name) {
  if (name == "completions") return ApiEndpoint::completions;
  if (name == "chat") return ApiEndpoint::chat;
  throw ParameterError("endpoint", name + ": must be completions or chat");
}

const char* api_path(ApiEndpoint endpoint) {
  return endpoint == ApiEndpoint::chat ? "/v1/chat/completions" : "/v1/completions";
}

nlohmann::json openai_request_body(const Request& r, ApiEndpoint endpoint,
                                   const std::string& model) {
  if (r.parent >= 0)
    throw Error(fmt::format("request {} continues request {}: a benchmark client does not "
                            "replay conversations",
                            r.id, r.parent));
  if (r.n != 1)
    throw Error(fmt::format("request {}: n = {} is not replayed (only n = 1)", r.id, r.n));
  nlohmann::json body = {{"model", model},
                         {"max_tokens", r.max_tokens},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}}};
  const bool text = r.prompt_ids.empty() && r.prompt_len == 0;
  if (endpoint == ApiEndpoint::chat) {
    if (!text)
      throw Error(fmt::format("request {}: the chat route needs a text prompt (a workload file "
                              "with \"prompt\"), not token ids",
                              r.id));
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", r.prompt}}});
  } else if (text) {
    body["prompt"] = r.prompt;
  } else if (!r.prompt_ids.empty()) {
    body["prompt"] = r.prompt_ids;
  } else {
    // Made-up ids of the given length, all of them: a server passes token ids through as they
    // are (llama-server does too), and a client cannot know whether the model wants a BOS.
    body["prompt"] = synthetic_prompt(r.id, r.prompt_len, kWorkloadVocab);
  }
  const SamplingParams& s = r.sampling;
  body["temperature"] = s.temperature;
  if (s.top_k != 0) body["top_k"] = s.top_k;
  if (s.top_p != 1.0f) body["top_p"] = s.top_p;
  if (s.min_p != 0.0f) body["min_p"] = s.min_p;
  if (s.repetition_penalty != 1.0f) body["repetition_penalty"] = s.repetition_penalty;
  if (s.frequency_penalty != 0.0f) body["frequency_penalty"] = s.frequency_penalty;
  if (s.presence_penalty != 0.0f) body["presence_penalty"] = s.presence_penalty;
  body["seed"] = s.seed;
  if (r.ignore_eos) body["ignore_eos"] = true;
  return body;
}

StreamChunk parse_stream_chunk(std::string_view data, ApiEndpoint endpoint) {
  StreamChunk c;
  if (data == "[DONE]") {
    c.done = true;
    return c;
  }
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    c.error = fmt::format("a stream event that is not a JSON object: {}",
                          data.substr(0, std::min<std::size_t>(data.size(), 200)));
    return c;
  }
  if (const auto e = j.find("error"); e != j.end()) {
    const bool has_message = e->is_object() && e->contains("message") &&
                             (*e)["message"].is_string();
    c.error = has_message ? (*e)["message"].get<std::string>() : e->dump();
    return c;
  }
  if (const auto ch = j.find("choices"); ch != j.end() && ch->is_array() && !ch->empty()) {
    const nlohmann::json& choice = ch->front();
    const nlohmann::json* text = nullptr;
    if (endpoint == ApiEndpoint::chat) {
      if (const auto d = choice.find("delta"); d != choice.end() && d->is_object())
        if (const auto t = d->find("content"); t != d->end()) text = &*t;
    } else if (const auto t = choice.find("text"); t != choice.end()) {
      text = &*t;
    }
    if (text != nullptr && text->is_string()) c.text = text->get<std::string>();
    if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string())
      c.finish_reason = f->get<std::string>();
  }
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (const auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
      c.prompt_tokens = p->get<int>();
    if (const auto g = u->find("completion_tokens"); g != u->end() && g->is_number_integer())
      c.completion_tokens = g->get<int>();
  }
  return c;
}

const char* client_outcome_name(ClientOutcome outcome) {
  switch (outcome) {
    case ClientOutcome::completed: return "completed";
    case ClientOutcome::disconnected: return "disconnected";
    case ClientOutcome::rejected: return "rejected";
    case ClientOutcome::failed: return "failed";
  }
  return "?";
}

StreamRecorder::StreamRecorder(int id, double sent, ApiEndpoint endpoint) : endpoint_(endpoint) {
  record_.id = id;
  record_.sent = sent;
}

void StreamRecorder::on_status(int http_status) { record_.http_status = http_status; }

void StreamRecorder::on_bytes(std::string_view bytes, double now) {
  if (record_.http_status != 200) {
    body_.append(bytes.substr(0, std::min<std::size_t>(bytes.size(), 4096 - body_.size())));
    return;
  }
  for (const SseEvent& e : parser_.feed(bytes)) {
    if (done_) {
      record_.error = "data after [DONE]";
      continue;
    }
    const StreamChunk c = parse_stream_chunk(e.data, endpoint_);
    if (!c.error.empty() && record_.error.empty()) record_.error = c.error;
    done_ = c.done;
    if (!c.text.empty()) {
      record_.chunk_times.push_back(now);
      record_.text += c.text;
    }
    if (!c.finish_reason.empty()) record_.finish_reason = c.finish_reason;
    if (c.prompt_tokens >= 0) record_.prompt_tokens = c.prompt_tokens;
    if (c.completion_tokens >= 0) record_.completion_tokens = c.completion_tokens;
  }
}

ClientRecord StreamRecorder::finish(double now, bool hung_up,
                                    const std::string& transport_error) {
  ClientRecord r = record_;
  r.ended = now;
  if (hung_up) {
    r.outcome = ClientOutcome::disconnected;
  } else if (r.http_status == 429 || r.http_status == 503) {
    r.outcome = ClientOutcome::rejected;
  } else if (r.http_status != 200) {
    r.outcome = ClientOutcome::failed;
    // OpenAI's error object when the body is one, else the body itself.
    const nlohmann::json j = nlohmann::json::parse(body_, nullptr, /*allow_exceptions=*/false);
    const bool error_object = j.is_object() && j.contains("error");
    const std::string message = !error_object ? body_ : parse_stream_chunk(body_, endpoint_).error;
    r.error = fmt::format("HTTP {}: {}", r.http_status,
                          r.http_status == 0 ? transport_error : message);
  } else if (!transport_error.empty()) {
    r.outcome = ClientOutcome::failed;
    r.error = transport_error;
  } else if (!r.error.empty()) {
    r.outcome = ClientOutcome::failed;
  } else if (!done_) {
    r.outcome = ClientOutcome::failed;
    r.error = "the stream ended without [DONE]";
  } else {
    r.outcome = ClientOutcome::completed;
  }
  if (r.outcome != ClientOutcome::failed) r.error.clear();
  return r;
}

std::vector<int> disconnect_plan(std::span<const Request> requests, double fraction,
                                 std::uint64_t seed) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    throw ParameterError("disconnect_fraction", fmt::format("{}: must be in [0, 1]", fraction));
  Rng rng(seed);
  std::vector<int> plan;
  plan.reserve(requests.size());
  for (const Request& r : requests) {
    const bool hang_up = rng.next_f32() < fraction;
    const int k = static_cast<int>(rng.next_u32() % static_cast<std::uint32_t>(r.max_tokens));
    plan.push_back(hang_up ? k : -1);
  }
  return plan;
}

std::vector<std::string> text_mismatches(std::span<const ClientRecord> records,
                                         const std::map<int, std::string>& expected) {
  std::vector<std::string> out;
  for (const ClientRecord& r : records) {
    if (r.outcome != ClientOutcome::completed) continue;
    const auto e = expected.find(r.id);
    if (e == expected.end()) {
      out.push_back(fmt::format("request {}: no expected text", r.id));
      continue;
    }
    if (r.text == e->second) continue;
    const auto at = static_cast<std::size_t>(
        std::mismatch(r.text.begin(), r.text.end(), e->second.begin(), e->second.end()).first -
        r.text.begin());
    out.push_back(fmt::format("request {}: texts part at byte {} ({} vs {} bytes)", r.id, at,
                              r.text.size(), e->second.size()));
  }
  return out;
}

BenchSlo parse_goodput(const std::vector<std::string>& items) {
  BenchSlo slo;
  bool seen[3] = {false, false, false};
  for (const std::string& item : items) {
    const std::size_t colon = item.find(':');
    const std::string key = item.substr(0, colon);
    const int k = key == "ttft" ? 0 : key == "tpot" ? 1 : key == "e2el" ? 2 : -1;
    if (colon == std::string::npos || k < 0)
      throw ParameterError("goodput", item + ": must be ttft:MS, tpot:MS or e2el:MS");
    if (seen[k]) throw ParameterError("goodput", item + ": " + key + " is given twice");
    double ms = 0.0;
    std::size_t used = 0;
    const std::string value = item.substr(colon + 1);
    try {
      ms = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(ms) || ms < 0.0)
      throw ParameterError("goodput", item + ": the bound must be a finite number of ms >= 0");
    seen[k] = true;
    (k == 0 ? slo.ttft : k == 1 ? slo.tpot : slo.e2el) = ms / 1e3;
    slo.set = true;
  }
  return slo;
}

LatencyStats latency_stats(std::span<const double> values) {
  LatencyStats s;
  s.summary = summarize(values);
  if (values.empty()) return s;
  double sq = 0.0;
  for (const double v : values) sq += (v - s.summary.mean) * (v - s.summary.mean);
  s.std = std::sqrt(sq / static_cast<double>(values.size()));
  return s;
}

BenchMetrics bench_metrics(std::span<const ClientRecord> records, double duration,
                           const BenchSlo& slo) {
  if (!(std::isfinite(duration) && duration > 0.0))
    throw Error(fmt::format("metrics: duration must be finite and > 0 s, got {}", duration));
  BenchMetrics m;
  m.duration = duration;
  m.slo = slo;
  std::vector<double> ttft, tpot, itl, e2el;
  int good = 0;
  for (const ClientRecord& r : records) {
    switch (r.outcome) {
      case ClientOutcome::completed: ++m.completed; break;
      case ClientOutcome::disconnected: ++m.disconnected; continue;
      case ClientOutcome::rejected: ++m.rejected; continue;
      case ClientOutcome::failed: ++m.failed; continue;
    }
    m.input_tokens += std::max(r.prompt_tokens, 0);
    m.output_tokens += r.output_tokens();
    if (r.chunk_times.empty()) continue;  // nothing generated: no latency to time
    const double first = r.chunk_times.front() - r.sent;
    const double last = r.chunk_times.back() - r.sent;
    const int n = r.output_tokens();
    const double per_token = n > 1 ? (last - first) / (n - 1) : 0.0;
    ttft.push_back(first);
    e2el.push_back(last);
    if (n > 1) tpot.push_back(per_token);
    for (std::size_t i = 1; i < r.chunk_times.size(); ++i)
      itl.push_back(r.chunk_times[i] - r.chunk_times[i - 1]);
    good += first <= slo.ttft && per_token <= slo.tpot && last <= slo.e2el;
  }
  // Peak concurrency: sweep the sends (+1) and ends (-1) in time order, ends first on a tie.
  std::vector<std::pair<double, int>> edges;
  for (const ClientRecord& r : records) {
    edges.emplace_back(r.sent, 1);
    edges.emplace_back(std::max(r.ended, r.sent), -1);
  }
  std::sort(edges.begin(), edges.end());
  for (int in_flight = 0; const auto& [t, step] : edges)
    m.peak_concurrency = std::max(m.peak_concurrency, in_flight += step);
  m.request_throughput = m.completed / duration;
  m.request_goodput = good / duration;
  m.output_throughput = static_cast<double>(m.output_tokens) / duration;
  m.total_token_throughput = static_cast<double>(m.input_tokens + m.output_tokens) / duration;
  m.ttft = latency_stats(ttft);
  m.tpot = latency_stats(tpot);
  m.itl = latency_stats(itl);
  m.e2el = latency_stats(e2el);
  return m;
}

}  // namespace inferlab
