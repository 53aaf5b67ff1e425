// The network half of bench_serving: one thread and one HTTP connection per request.
#include "serving_replay.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

httplib::Headers auth_headers(const ReplayOptions& o) {
  httplib::Headers h;
  if (!o.api_key.empty()) h.emplace("Authorization", "Bearer " + o.api_key);
  return h;
}

// A cap on requests in flight: those over it wait for a free place, as vLLM's
// --max-concurrency does; a request's clock starts when it is sent, after that wait.
class Gate {
 public:
  explicit Gate(int places) : free_(places) {}
  void enter() {
    if (free_ < 0) return;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void leave() {
    if (free_ < 0) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    changed_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int free_;  // -1: no cap
};

ClientRecord send_one(const Request& r, const ReplayOptions& o, Clock::time_point start,
                      int hang_up_after) {
  StreamRecorder recorder(r.id, seconds_since(start), o.endpoint);
  httplib::Client client(o.host, o.port);
  client.set_connection_timeout(10);
  client.set_read_timeout(static_cast<time_t>(o.timeout_s));
  client.set_write_timeout(30);
  httplib::Request req;
  req.method = "POST";
  req.path = api_path(o.endpoint);
  req.headers = auth_headers(o);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.body = openai_request_body(r, o.endpoint, o.model).dump();
  bool hung_up = false;
  req.response_handler = [&](const httplib::Response& res) {
    recorder.on_status(res.status);
    hung_up = hang_up_after == 0;
    return !hung_up;
  };
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    recorder.on_bytes({data, n}, seconds_since(start));
    hung_up = hang_up_after > 0 && recorder.text_chunks() >= hang_up_after;
    return !hung_up;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  client.send(req, res, error);
  const bool clean = error == httplib::Error::Success || hung_up;
  return recorder.finish(seconds_since(start), hung_up, clean ? "" : httplib::to_string(error));
}

}  // namespace

void set_base_url(const std::string& url, ReplayOptions& o) {
  const std::string scheme = "http://";
  std::string rest = url.rfind(scheme, 0) == 0 ? url.substr(scheme.size()) : "";
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const std::size_t colon = rest.rfind(':');
  int port = 0;
  if (colon != std::string::npos && colon > 0 && colon + 1 < rest.size() &&
      rest.find('/') == std::string::npos) {
    try {
      std::size_t used = 0;
      port = std::stoi(rest.substr(colon + 1), &used);
      if (used != rest.size() - colon - 1) port = 0;
    } catch (const std::exception&) {
      port = 0;
    }
  }
  if (port < 1 || port > 65535)
    throw ParameterError("base_url", url + ": must be http://HOST:PORT (port in [1, 65535])");
  o.host = rest.substr(0, colon);
  o.port = port;
}

std::string first_served_model(const ReplayOptions& o) {
  httplib::Client client(o.host, o.port);
  client.set_connection_timeout(10);
  const httplib::Result res = client.Get("/v1/models", auth_headers(o));
  if (!res)
    throw Error(fmt::format("GET http://{}:{}/v1/models: {}", o.host, o.port,
                            httplib::to_string(res.error())));
  const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 200 || !j.is_object() || !j.contains("data") || !j["data"].is_array() ||
      j["data"].empty() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    throw Error(fmt::format("GET /v1/models answered {} without a model: {}", res->status,
                            res->body.substr(0, 200)));
  return j["data"][0]["id"].get<std::string>();
}

ReplayResult replay_workload(const std::vector<Request>& requests, const ReplayOptions& o) {
  ReplayResult result;
  result.records.resize(requests.size());
  Gate gate(o.max_concurrency > 0 ? o.max_concurrency : -1);
  std::vector<std::thread> threads;
  threads.reserve(requests.size());
  const Clock::time_point start = Clock::now();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(requests[i].arrival)));
    gate.enter();
    const int hang_up_after = o.hang_up_after.empty() ? -1 : o.hang_up_after[i];
    threads.emplace_back([&, i, hang_up_after] {
      try {
        result.records[i] = send_one(requests[i], o, start, hang_up_after);
      } catch (const std::exception& e) {
        result.records[i].id = requests[i].id;
        result.records[i].outcome = ClientOutcome::failed;
        result.records[i].error = e.what();
      }
      gate.leave();
    });
  }
  for (std::thread& t : threads) t.join();
  result.duration = seconds_since(start);
  return result;
}

}  // namespace inferlab
