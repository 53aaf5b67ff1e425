#pragma once
/// @file openai_api.hpp
/// @brief The OpenAI API as data: a request body checked and turned into what the engine needs
/// (CompletionRequest), and the response bodies, whole or as server-sent-event chunks. No
/// sockets here: the HTTP part (http/openai_server.hpp) moves these bytes.
///
/// Validation follows OpenAI's: unknown fields are ignored; a known field of the wrong type or
/// out of its range is a 400 with the error object
/// `{"error": {"message", "type": "invalid_request_error", "param", "code"}}`.
///
/// Streaming (`"stream": true`) is a sequence of SSE events `data: {json}\n\n`: for chat, a
/// first chunk per choice whose delta holds the role, then content deltas, then a chunk with
/// an empty delta and the finish_reason; with `stream_options.include_usage` one more chunk
/// with `"choices": []` and the usage; then `data: [DONE]\n\n`.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/model/chat_template.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/serving/live_engine.hpp"

namespace inferlab {

/// @brief An error the API reports with an HTTP status and OpenAI's error object.
class ApiError : public Error {
 public:
  /// @param status HTTP status (400, 401, 404, 413, 415, 429, 503)
  /// @param message what is wrong, for a person
  /// @param param the request field at fault ("" when none)
  /// @param type OpenAI's error type (invalid_request_error, authentication_error, ...)
  /// @param code a short machine-readable code ("" when none)
  ApiError(int status, const std::string& message, std::string param = "",
           std::string type = "invalid_request_error", std::string code = "");
  int status() const { return status_; }                 ///< the HTTP status
  const std::string& param() const { return param_; }    ///< the field at fault, or ""
  const std::string& type() const { return type_; }      ///< OpenAI's error type
  const std::string& code() const { return code_; }      ///< the short code, or ""

 private:
  int status_;
  std::string param_, type_, code_;
};

/// @brief `{"error": {"message", "type", "param", "code"}}` (param and code null when empty).
nlohmann::json error_json(const ApiError& error);

/// @brief The constraint a request asks for (chapter 08's languages).
enum class OutputConstraint {
  none,         ///< free text (`response_format` absent or `{"type": "text"}`)
  json_object,  ///< `{"type": "json_object"}`: any JSON value
  json_schema,  ///< `{"type": "json_schema", "json_schema": {"schema": ...}}`
  grammar,      ///< the `grammar` extension: GBNF text
  regex,        ///< the `regex` extension: a regular expression
};

/// @brief The limits the server puts on a request (flags of the server).
struct ApiLimits {
  int max_tokens = 4096;  ///< largest max_tokens accepted
  int max_n = 16;         ///< largest n accepted
  int max_stop = 4;       ///< most stop strings (OpenAI's limit)
  int max_top_logprobs = 20;  ///< largest top_logprobs (OpenAI's limit; 5 for completions)
};

/// @brief A checked /v1/completions or /v1/chat/completions request.
struct CompletionRequest {
  bool chat = false;                  ///< /v1/chat/completions
  std::string model;                  ///< as given ("" if absent)
  std::string prompt;                 ///< completions: the prompt text
  std::vector<int> prompt_ids;        ///< completions: the prompt as token ids (when given so)
  std::vector<ChatMessage> messages;  ///< chat: the conversation
  std::optional<int> max_tokens;      ///< max_tokens or max_completion_tokens (absent: no limit)
  int n = 1;                          ///< choices
  /// temperature (default 1), top_p, top_k, min_p, presence and frequency penalties, seed
  SamplingParams sampling;
  bool seed_given = false;         ///< a seed was given (else the server picks one)
  std::vector<std::string> stop;   ///< stop strings, never part of the output
  bool stream = false;             ///< answer as server-sent events
  bool ignore_eos = false;         ///< extension (vLLM, llama-server): generate past end of text
  bool include_usage = false;      ///< stream_options.include_usage
  int top_logprobs = -1;           ///< -1: no logprobs; else the top alternatives to return
  OutputConstraint constraint = OutputConstraint::none;  ///< response_format, grammar or regex
  std::string constraint_text;  ///< the schema (JSON text), grammar or regex
};

/// @brief Checks @p body (a parsed JSON request) and builds the request.
/// @param body the request body
/// @param chat true for /v1/chat/completions (messages), false for /v1/completions (prompt)
/// @param limits the server's caps
/// @throws ApiError (400) naming the field for a missing required field, a wrong type or a
/// value out of range.
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat,
                                           const ApiLimits& limits);

/// @brief One token's log-probability as the API returns it.
struct TokenLogprob {
  std::string token;  ///< the token's text (its bytes; may be part of a character)
  float logprob = 0.0f;  ///< its log-probability
  std::vector<std::pair<std::string, float>> top;  ///< the most probable tokens, best first
};

/// @brief What one choice produced.
struct ChoiceOutput {
  std::string text;                         ///< the text sent (stop string excluded)
  FinishReason finish = FinishReason::none;  ///< why it ended
  std::vector<TokenLogprob> logprobs;       ///< one per generated token (when asked)
  int tokens = 0;                           ///< tokens generated
};

/// @brief What every response of one request shares.
struct ResponseHeader {
  bool chat = false;     ///< chat.completion(.chunk) or text_completion
  std::string id;        ///< "chatcmpl-..." or "cmpl-..."
  long long created = 0;  ///< Unix seconds
  std::string model;     ///< the served model's name
  bool logprobs = false;  ///< the request asked for log-probabilities
};

/// @brief `{"prompt_tokens", "completion_tokens", "total_tokens"}`.
nlohmann::json usage_json(int prompt_tokens, int completion_tokens);

/// @brief The whole (non-streaming) response: one choice per output, and the usage.
nlohmann::json completion_json(const ResponseHeader& header,
                               const std::vector<ChoiceOutput>& choices, int prompt_tokens);

/// @brief One streamed chunk for choice @p index.
/// @param header the response's shared fields
/// @param index the choice
/// @param role chat only: the role of the first delta ("" for none)
/// @param text the new text ("" for none; a chat delta then has no content)
/// @param logprobs the log-probabilities of the tokens behind @p text (may be empty)
/// @param finish the finish reason of the last chunk (none: null)
/// @param with_usage add `"usage": null` (stream_options.include_usage asks every chunk to)
nlohmann::json chunk_json(const ResponseHeader& header, int index, const std::string& role,
                          const std::string& text, const std::vector<TokenLogprob>& logprobs,
                          FinishReason finish, bool with_usage);

/// @brief The usage chunk of stream_options.include_usage: no choice, the usage.
nlohmann::json usage_chunk_json(const ResponseHeader& header, int prompt_tokens,
                                int completion_tokens);

/// @brief One server-sent event: `data: ` + @p payload as compact JSON + a blank line.
/// Invalid UTF-8 in strings is replaced (U+FFFD), never thrown on.
std::string sse_event(const nlohmann::json& payload);

/// @brief The event that ends a stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

/// @brief @p value as compact JSON text, invalid UTF-8 replaced (U+FFFD).
std::string dump_json(const nlohmann::json& value);

}  // namespace inferlab
