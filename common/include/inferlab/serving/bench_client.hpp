#pragma once
/// @file bench_client.hpp
/// @brief What a benchmark client of an OpenAI-compatible server needs besides the network: the
/// request body for a workload request, the meaning of each streamed chunk, one request's record
/// (when each piece of text arrived) and the metrics `vllm bench serve` prints, under its names.
///
/// Measured at the client, as a user feels them (times in seconds from the request's send):
///   TTFT = first chunk carrying text; E2EL = last chunk carrying text;
///   TPOT = (E2EL - TTFT) / (output tokens - 1), requests of more than one token only;
///   ITL  = the gaps between consecutive text chunks, pooled over all requests.
/// Output tokens are the server's count (`usage.completion_tokens`, asked for with
/// `stream_options.include_usage`), else the number of text chunks. A chunk may carry more than
/// one token (a server holding back an incomplete UTF-8 character or a possible stop string), so
/// ITL is per chunk, as vLLM's client measures it.

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/runtime/metrics.hpp"
#include "inferlab/serving/request.hpp"
#include "inferlab/serving/sse_parser.hpp"

namespace inferlab {

/// @brief Which OpenAI route a benchmark drives.
enum class ApiEndpoint {
  completions,  ///< POST /v1/completions: the prompt as text or as token ids
  chat,         ///< POST /v1/chat/completions: the prompt as one user message (text only)
};
/// @brief Parses "completions" or "chat". @throws inferlab::Error on anything else.
ApiEndpoint parse_api_endpoint(const std::string& name);
/// @brief "/v1/completions" or "/v1/chat/completions".
const char* api_path(ApiEndpoint endpoint);

/// @brief The streaming request body for @p r: model, the prompt (text; or token ids, for a
/// request given by ids, or by length: Request::prompt_len made-up ids from synthetic_prompt()
/// over kWorkloadVocab, none of them a BOS, as a server sends ids to the model unchanged),
/// max_tokens, stream with include_usage, the sampling fields that differ from the neutral
/// value (temperature always; top_k, top_p, min_p, penalties), seed, and `ignore_eos` when the
/// request sets it (an extension vLLM and llama-server read).
/// @param r a workload request (Request::parent must be -1: conversations are not replayed)
/// @param endpoint which route the body is for
/// @param model the served model's name
/// @return the JSON body
/// @throws inferlab::Error for a request that continues a conversation, asks for n > 1, or, on
/// the chat route, has no text prompt.
nlohmann::json openai_request_body(const Request& r, ApiEndpoint endpoint,
                                   const std::string& model);

/// @brief What one SSE event of a completion stream says.
struct StreamChunk {
  bool done = false;           ///< the event was `[DONE]`, the end of the stream
  std::string text;            ///< new text (choices[0].text, or choices[0].delta.content)
  std::string finish_reason;   ///< "stop", "length", ... when this chunk ends the choice
  int prompt_tokens = -1;      ///< usage.prompt_tokens, -1 when the chunk has no usage
  int completion_tokens = -1;  ///< usage.completion_tokens, -1 when the chunk has no usage
  std::string error;           ///< an error object's message, or why the data is not a chunk
};
/// @brief Reads the data of one SSE event of a completion stream on @p endpoint. Never throws:
/// data that is neither `[DONE]` nor a JSON object becomes StreamChunk::error.
StreamChunk parse_stream_chunk(std::string_view data, ApiEndpoint endpoint);

/// @brief How a request ended, seen from the client.
enum class ClientOutcome {
  completed,     ///< HTTP 200 and a stream that ended with [DONE]
  disconnected,  ///< the client hung up on purpose (a fault test)
  rejected,      ///< HTTP 429 or 503: the server's queue was full (back-pressure)
  failed,        ///< anything else: another status, an error chunk, a cut stream
};
/// @brief "completed", "disconnected", "rejected" or "failed".
const char* client_outcome_name(ClientOutcome outcome);

/// @brief One request as the client saw it. Times are seconds on the benchmark's clock.
struct ClientRecord {
  int id = 0;                        ///< the workload request's id
  double sent = 0.0;                 ///< when the request was sent
  double ended = 0.0;                ///< when its response ended (or the client hung up)
  int http_status = 0;               ///< the response status (0: no response)
  ClientOutcome outcome = ClientOutcome::failed;  ///< how it ended
  std::vector<double> chunk_times;   ///< (C) when each chunk carrying text arrived
  std::string text;                  ///< the text, all chunks joined
  std::string finish_reason;         ///< the last finish_reason streamed ("" if none)
  int prompt_tokens = -1;            ///< usage.prompt_tokens (-1: the server sent no usage)
  int completion_tokens = -1;        ///< usage.completion_tokens (-1: no usage)
  std::string error;                 ///< why it failed ("" unless outcome is failed)

  /// @brief The server's completion_tokens when given, else the number of text chunks.
  int output_tokens() const {
    return completion_tokens >= 0 ? completion_tokens : static_cast<int>(chunk_times.size());
  }
};

/// @brief Builds a ClientRecord from a response as it arrives: the status, then the body bytes
/// in any split (the SSE stream of a 200, or an error body), then how the connection ended.
class StreamRecorder {
 public:
  /// @brief Starts the record of request @p id, sent at @p sent, on @p endpoint.
  StreamRecorder(int id, double sent, ApiEndpoint endpoint);
  /// @brief The response's status line arrived.
  void on_status(int http_status);
  /// @brief Body bytes arrived at @p now; a text chunk is timed when its event is complete.
  void on_bytes(std::string_view bytes, double now);
  /// @brief Text chunks received so far.
  int text_chunks() const { return static_cast<int>(record_.chunk_times.size()); }
  /// @brief The finished record.
  /// @param now when the response ended (or the client hung up)
  /// @param hung_up true when the client closed the connection on purpose
  /// @param transport_error the network error ("" if none)
  /// @return the record with its outcome: disconnected if @p hung_up; else rejected for 429 or
  /// 503; failed for another status (error: the body's error message), a transport error, an
  /// error chunk or a stream without [DONE]; completed otherwise
  ClientRecord finish(double now, bool hung_up, const std::string& transport_error);

 private:
  ApiEndpoint endpoint_;
  SseParser parser_;
  ClientRecord record_;
  std::string body_;  // a non-200 response's body, for its error message
  bool done_ = false;
};

/// @brief Which requests of a fault test hang up, and when: each request, with probability
/// @p fraction, hangs up after k text chunks, k uniform in [0, max_tokens) (k = 0: as soon as
/// the response's headers arrive, which may be while it still waits in the server's queue).
/// @param requests the workload
/// @param fraction in [0, 1]
/// @param seed same seed, same plan
/// @return (R) for each request, k, or -1 for one that reads its whole stream
/// @throws inferlab::ParameterError("disconnect_fraction", ...) for a fraction outside [0, 1].
std::vector<int> disconnect_plan(std::span<const Request> requests, double fraction,
                                 std::uint64_t seed);

/// @brief The completed requests of @p records whose text differs from @p expected (request id
/// to text, e.g. from a solo run of the same greedy workload), or that @p expected lacks.
/// @return one line per mismatch: the id and where the texts part (empty: all equal)
std::vector<std::string> text_mismatches(std::span<const ClientRecord> records,
                                         const std::map<int, std::string>& expected);

/// @brief The service-level objective of goodput, as `vllm bench serve --goodput` takes it.
struct BenchSlo {
  double ttft = std::numeric_limits<double>::infinity();  ///< seconds
  double tpot = std::numeric_limits<double>::infinity();  ///< seconds
  double e2el = std::numeric_limits<double>::infinity();  ///< seconds
  bool set = false;  ///< at least one bound was given (goodput is reported only then)
};
/// @brief Parses vLLM's `--goodput` values: "ttft:MS", "tpot:MS", "e2el:MS" (milliseconds,
/// finite, >= 0), each at most once.
/// @throws inferlab::ParameterError("goodput", ...) on any other form.
BenchSlo parse_goodput(const std::vector<std::string>& items);

/// @brief A latency distribution: mean, median (p50), p90, p99 with min, max and count
/// (Summary) and the population standard deviation vLLM reports as `std`.
struct LatencyStats {
  Summary summary;   ///< seconds
  double std = 0.0;  ///< seconds (0 for an empty sample)
};
/// @brief summarize() of @p values plus their population standard deviation.
LatencyStats latency_stats(std::span<const double> values);

/// @brief What `vllm bench serve` prints, over one benchmark run.
struct BenchMetrics {
  int completed = 0;                  ///< requests with outcome completed
  int disconnected = 0;               ///< requests the client hung up on
  int rejected = 0;                   ///< requests answered 429 / 503
  int failed = 0;                     ///< requests that failed otherwise
  double duration = 0.0;              ///< seconds, first send to last response
  long long input_tokens = 0;         ///< prompt tokens of completed requests (server's count)
  long long output_tokens = 0;        ///< output tokens of completed requests
  double request_throughput = 0.0;    ///< completed requests / s
  double request_goodput = 0.0;       ///< completed requests meeting the SLO / s
  double output_throughput = 0.0;     ///< output tokens / s
  double total_token_throughput = 0;  ///< (input + output tokens) / s
  int peak_concurrency = 0;  ///< most requests in flight at once (sent, not yet ended), any outcome
  BenchSlo slo;                       ///< the SLO goodput was measured against
  LatencyStats ttft;  ///< over completed requests with text, seconds
  LatencyStats tpot;  ///< over completed requests of more than one output token, seconds
  LatencyStats itl;   ///< pooled gaps between text chunks, seconds
  LatencyStats e2el;  ///< over completed requests with text, seconds
};
/// @brief The metrics of @p records, a run of @p duration seconds, goodput under @p slo.
/// @throws inferlab::Error if @p duration is not finite and > 0.
BenchMetrics bench_metrics(std::span<const ClientRecord> records, double duration,
                           const BenchSlo& slo);

}  // namespace inferlab
