#pragma once
/// @file serving_replay.hpp
/// @brief The network half of bench_serving: replays a workload against an OpenAI-compatible
/// server over HTTP (cpp-httplib), one thread and one connection per request, each sent at its
/// arrival time, and records every stream with StreamRecorder.

#include <cstdint>
#include <string>
#include <vector>

#include "inferlab/serving/bench_client.hpp"

namespace inferlab {

/// @brief Where and how to send.
struct ReplayOptions {
  std::string host = "127.0.0.1";  ///< the server's host
  int port = 8080;                 ///< the server's port
  ApiEndpoint endpoint = ApiEndpoint::completions;  ///< the route every request takes
  std::string model;                                ///< the served model's name
  std::string api_key;                              ///< sent as a Bearer token when not empty
  int max_concurrency = 0;  ///< requests in flight at most (0: no cap; later ones wait)
  double timeout_s = 600;   ///< a request's read timeout, seconds
  /// (R) per request, hang up after this many text chunks (-1: never); empty: nobody hangs up.
  std::vector<int> hang_up_after;
};

/// @brief What a replay measured.
struct ReplayResult {
  std::vector<ClientRecord> records;  ///< (R) in workload order
  double duration = 0.0;              ///< first send to last response end, seconds
};

/// @brief Splits "http://HOST:PORT" (a trailing "/" allowed) into @p o's host and port.
/// @throws inferlab::ParameterError("base_url", ...) for another scheme or form.
void set_base_url(const std::string& url, ReplayOptions& o);

/// @brief GET /v1/models: the first served model's id.
/// @throws inferlab::Error if the server does not answer 200 with a model.
std::string first_served_model(const ReplayOptions& o);

/// @brief Sends every request at its arrival (seconds after the start) and waits for all.
ReplayResult replay_workload(const std::vector<Request>& requests, const ReplayOptions& o);

}  // namespace inferlab
