#pragma once
/// @file openai_server.hpp
/// @brief An OpenAI-compatible HTTP server over the live engine (chapter 10), with cpp-httplib.
///
/// The design of llama.cpp's `llama-server`: HTTP worker threads parse and check each request,
/// render the chat template, tokenize, compile a constraint, then wait on the request's
/// RequestStream while the one engine thread (LiveEngine) generates; each worker turns its
/// tokens into text (TextStream: UTF-8 holdback, stop strings) and writes the response, whole
/// or as server-sent events. Routes: POST /v1/completions, /v1/chat/completions, /tokenize,
/// /detokenize; GET /v1/models, /health, /metrics.

#include <cstddef>
#include <memory>
#include <string>

#include "inferlab/model/chat_template.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/live_engine.hpp"
#include "inferlab/serving/openai_api.hpp"

namespace inferlab {

/// @brief How the server listens and what it accepts.
struct ServerConfig {
  std::string host = "127.0.0.1";  ///< address to bind (loopback unless told otherwise)
  int port = 8080;                 ///< TCP port; 0 picks a free one
  std::string api_key;             ///< required as `Authorization: Bearer KEY` ("" = none)
  std::size_t max_body_bytes = std::size_t(1) << 20;  ///< larger bodies get 413
  int http_threads = 128;          ///< worker threads (each open request holds one)
  std::string model_name;          ///< the id /v1/models lists ("" = the one attach() gives)
  ApiLimits limits;                ///< max_tokens, n, stop caps
};

/// @brief Connections the kernel queues for the accept loop (the listen() backlog). cpp-httplib
/// 0.11 listens with 5 and has no setting for it: a burst of connects beyond that while the
/// accept thread waits for a core is dropped (the client's SYN is retransmitted a second later,
/// or the connection is reset). The server listens again with this backlog, as Linux allows on a
/// listening socket (the kernel caps it at net.core.somaxconn).
inline constexpr int kListenBacklog = 1024;

/// @brief The HTTP server. Binds at construction; serves until stop().
class OpenAIServer {
 public:
  /// @brief Binds @p config.host : @p config.port (the engine is attached later: until then
  /// /health answers 503 and the other routes 503 too).
  /// @throws inferlab::Error if the address cannot be bound.
  explicit OpenAIServer(const ServerConfig& config);
  ~OpenAIServer();  ///< stops and joins nothing: call stop() and wait for listen() first
  OpenAIServer(const OpenAIServer&) = delete;             ///< owns a socket
  OpenAIServer& operator=(const OpenAIServer&) = delete;  ///< owns a socket

  /// @brief The port bound (the chosen one when config.port was 0).
  int port() const;
  /// @brief Starts serving requests: /health turns 200.
  /// @param engine the engine thread (must outlive the server)
  /// @param tokenizer the model's tokenizer (must outlive the server)
  /// @param chat_template renders /v1/chat/completions' messages (must outlive the server)
  /// @param model_name the model id /v1/models lists and responses carry, unless
  ///        ServerConfig::model_name is set
  void attach(LiveEngine& engine, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
              const std::string& model_name);
  /// @brief Accepts connections until stop(); returns when every worker has finished.
  void listen();
  /// @brief Stops accepting; listen() returns once the open requests are done (cancel them in
  /// the engine first for a quick exit).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab
