// The HTTP part of the server: routes, request threads, streaming responses (cpp-httplib).
#include "inferlab/http/openai_server.hpp"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "inferlab/base/json_input.hpp"
#include "inferlab/constrain/constraint.hpp"
#include "inferlab/http/client_socket.hpp"
#include "inferlab/serving/text_stream.hpp"

namespace inferlab {

namespace {

using Json = nlohmann::json;

// A chapter 08 constraint for one request: the compiled grammar and its parser and mask cache,
// shared by the request's choices (all on the engine thread), each choice with its own state.
struct CompiledConstraint {
  Grammar grammar;
  PushdownParser parser;
  MaskComputer masks;
  const std::vector<std::string>& bytes;
  int end_token;
  CompiledConstraint(Grammar g, const TokenTrie& trie, const std::vector<std::string>& b, int end)
      : grammar(std::move(g)), parser(grammar), masks(parser, trie, b, end), bytes(b),
        end_token(end) {}
};

class ConstraintFilter : public TokenFilter {
 public:
  explicit ConstraintFilter(std::shared_ptr<CompiledConstraint> c)
      : c_(std::move(c)), state_(c_->parser.initial_state()) {}
  bool mask(std::span<float> logits) override {
    if (state_ == PushdownParser::kDead) return false;
    const TokenMask& m = c_->masks.mask(state_);
    if (m.count() == 0) return false;
    apply_token_mask(logits, m);
    return true;
  }
  void accept(int token) override {
    if (token == c_->end_token || state_ == PushdownParser::kDead) return;
    state_ = c_->parser.advance(state_, c_->bytes[std::size_t(token)]);
  }

 private:
  std::shared_ptr<CompiledConstraint> c_;
  int state_;
};

// The longest a worker waits in one call of its content provider: httplib checks between two
// calls whether the server is stopping (a hang-up or an event ends the wait at once).
constexpr std::chrono::milliseconds kWaitSlice{100};

// One request being answered: the engine's events turned into text, chunks and the final body.
struct Completion {
  LiveEngine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  CompletionRequest request;
  ResponseHeader header;
  std::shared_ptr<RequestStream> stream;
  int client_socket = -1;  // the connection's socket (-1: not found, a hang-up shows at a write)
  std::vector<TextStream> texts;
  std::vector<ChoiceOutput> out;
  std::vector<int> prev;  // each choice's last token (a piece's text depends on it)
  int open = 0;           // choices not closed
  bool started = false;   // the role chunks were written
  bool finished = false;  // the whole response is in `pending` (or was written)
  bool aborted = false;   // the engine cancelled the request (shutdown)
  std::string pending;    // bytes to write

  // One engine event: the choice's new text, its chunk when streaming, its end.
  void handle(const TokenEvent& ev) {
    const std::size_t i = std::size_t(ev.choice);
    if (out[i].finish != FinishReason::none) return;  // closed here already (a stop string)
    std::string delta;
    std::vector<TokenLogprob> lps;
    FinishReason finish = FinishReason::none;
    if (ev.token >= 0) {
      ++out[i].tokens;
      delta = texts[i].push(ev.token);
      if (header.logprobs) {
        TokenLogprob lp{tokenizer->decode_piece(prev[i], ev.token), ev.logprob, {}};
        for (const auto& [id, value] : ev.top)
          lp.top.emplace_back(tokenizer->decode_piece(prev[i], id), value);
        lps.push_back(lp);
        out[i].logprobs.push_back(std::move(lp));
      }
      prev[i] = ev.token;
      if (texts[i].stopped()) {
        finish = FinishReason::stop;
        engine->stop_choice(stream, ev.choice);  // its later tokens are not wanted
      }
    }
    if (finish == FinishReason::none) finish = ev.finish;
    if (finish == FinishReason::cancelled) aborted = true;
    if (finish != FinishReason::none) {
      delta += texts[i].finish();
      out[i].finish = finish;
      --open;
    }
    out[i].text += delta;
    if (!request.stream) return;
    if (!delta.empty() || !lps.empty())
      pending += sse_event(chunk_json(header, ev.choice, "", delta, lps, FinishReason::none,
                                      request.include_usage));
    if (finish != FinishReason::none)
      pending += sse_event(
          chunk_json(header, ev.choice, "", "", {}, finish, request.include_usage));
  }

  // The end: the usage chunk and [DONE], or the whole body.
  void finish() {
    finished = true;
    if (!request.stream) {
      pending = dump_json(completion_json(header, out, stream->prompt_tokens()));
      return;
    }
    if (request.include_usage) {
      int tokens = 0;
      for (const ChoiceOutput& c : out) tokens += c.tokens;
      pending += sse_event(usage_chunk_json(header, stream->prompt_tokens(), tokens));
    }
    pending += kSseDone;
  }

  // httplib's content provider: called until the response is done, false ends it (and the
  // connection) early, and the releaser then cancels the request. Each call waits for the
  // engine's next events or for the client to hang up, whichever comes first: a client that
  // leaves is noticed at once, queued or running, streamed or not, not at the next write.
  bool provide(httplib::DataSink& sink) {
    if (request.stream && !started) {
      started = true;
      if (header.chat)
        for (int i = 0; i < stream->choices(); ++i)
          pending += sse_event(chunk_json(header, i, "assistant", "", {}, FinishReason::none,
                                          request.include_usage));
    }
    if (open > 0) {
      std::vector<TokenEvent> events;
      stream->wait(events, kWaitSlice, client_socket);
      for (const TokenEvent& ev : events) handle(ev);
    }
    if (aborted) return false;
    if (open > 0 && client_socket >= 0 && peer_hung_up(client_socket)) return false;
    if (open == 0 && !finished) finish();
    if (!pending.empty()) {
      if (!sink.write(pending.data(), pending.size())) return false;
      pending.clear();
    }
    if (finished) sink.done();
    return true;
  }
};

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(dump_json(error_json(e)), "application/json");
}

}  // namespace

struct OpenAIServer::Impl {
  ServerConfig config;
  httplib::Server http;
  int port = 0;
  std::atomic<LiveEngine*> engine{nullptr};
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  std::vector<std::string> token_bytes;  // chapter 08's view of the vocabulary
  std::unique_ptr<TokenTrie> trie;
  int end_token = -1;  // the end-of-generation token a constraint allows where it may end
  std::atomic<std::uint64_t> next_id{0};
  socket_t listen_socket = INVALID_SOCKET;  // the bound socket (httplib's own)
  // httplib's stop() does nothing until listen_after_bind() has marked the server running, so a
  // stop() that comes first (a model that fails to load at once) would leave listen() blocked
  // forever. Each side announces itself before it looks at the other (both sequentially
  // consistent), so at least one of them sees the other: listen() returns at once, or stop()
  // waits for the server to run and then stops it.
  std::atomic<bool> listen_entered{false};
  std::atomic<bool> listen_returned{false};
  std::atomic<bool> stop_requested{false};

  LiveEngine& ready() const {
    LiveEngine* e = engine.load();
    if (!e) throw ApiError(503, "the model is loading", "", "server_error", "loading");
    return *e;
  }

  static Json parse_body(const httplib::Request& req) {
    const std::string type = req.get_header_value("Content-Type");
    if (type.rfind("application/json", 0) != 0)
      throw ApiError(415, fmt::format("Content-Type must be application/json, not '{}'", type),
                     "", "invalid_request_error", "unsupported_media_type");
    // The checked parse: a body nested 100,000 arrays deep would overflow the stack of the
    // recursive walks that follow (copying, dumping), so the depth is refused first.
    try {
      return Json(parse_json_input(req.body, "the request body"));
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "", "invalid_request_error", "invalid_json");
    }
  }

  // The prompt's ids: the rendered conversation (special tokens parsed) or the prompt text.
  std::vector<int> prompt_ids(const CompletionRequest& r) const {
    if (!r.prompt_ids.empty()) return r.prompt_ids;
    EncodeOptions options;
    std::string text = r.prompt;
    if (r.chat) {
      auto piece = [&](int id) { return id >= 0 ? tokenizer->piece(id) : std::string(); };
      const ChatSpecialTokens specials{piece(tokenizer->bos_id()), piece(tokenizer->eos_id())};
      try {
        text = chat_template->render(r.messages, /*add_generation_prompt=*/true, specials);
      } catch (const Error& e) {
        throw ApiError(400, e.what(), "messages");
      }
      options.parse_special = true;
      // A template that wants BOS writes it; otherwise the vocabulary's own rule adds it.
      options.add_bos = specials.bos.empty() || text.rfind(specials.bos, 0) != 0;
    }
    return tokenizer->encode(text, options);
  }

  std::function<std::unique_ptr<TokenFilter>()> constraint(const CompletionRequest& r) const {
    if (r.constraint == OutputConstraint::none) return {};
    ConstraintKind kind = ConstraintKind::json_mode;
    const char* param = "response_format";
    if (r.constraint == OutputConstraint::json_schema) kind = ConstraintKind::json_schema;
    if (r.constraint == OutputConstraint::grammar) {
      kind = ConstraintKind::gbnf;
      param = "grammar";
    }
    if (r.constraint == OutputConstraint::regex) {
      kind = ConstraintKind::regex;
      param = "regex";
    }
    std::shared_ptr<CompiledConstraint> compiled;
    try {
      // JSON answers with at most one whitespace character between tokens, as OpenAI's are
      // compact: a small model whose masked distribution favours newlines would otherwise pad
      // until max_tokens.
      JsonSchemaLimits limits;
      limits.max_whitespace = 1;
      compiled = std::make_shared<CompiledConstraint>(
          compile_constraint(kind, r.constraint_text, param, limits), *trie, token_bytes,
          end_token);
    } catch (const Error& e) {
      throw ApiError(400, fmt::format("{}: {}", param, e.what()), param);
    }
    return [compiled] { return std::make_unique<ConstraintFilter>(compiled); };
  }

  void completion(const httplib::Request& req, httplib::Response& res, bool chat) {
    LiveEngine& e = ready();
    const CompletionRequest r = parse_completion_request(parse_body(req), chat, config.limits);
    LiveRequest live;
    live.prompt = prompt_ids(r);
    const int room = e.context() - static_cast<int>(live.prompt.size()) + 1;
    // OpenAI's defaults: 16 tokens for a completion, up to the context for a chat answer.
    const int default_tokens = std::max(1, std::min(chat ? room : 16, config.limits.max_tokens));
    live.max_tokens = r.max_tokens ? *r.max_tokens : default_tokens;
    live.n = r.n;
    live.sampling = r.sampling;
    if (!r.seed_given) live.sampling.seed = std::random_device{}();
    live.top_logprobs = r.top_logprobs;
    live.ignore_eos = r.ignore_eos;
    live.make_filter = constraint(r);

    auto c = std::make_shared<Completion>();
    c->engine = &e;
    c->tokenizer = tokenizer;
    c->request = r;
    const std::uint64_t id = next_id++;
    c->header = {chat, fmt::format("{}-{:016x}", chat ? "chatcmpl" : "cmpl", id),
                 static_cast<long long>(std::time(nullptr)), config.model_name,
                 r.top_logprobs >= 0};
    for (int i = 0; i < r.n; ++i) {
      c->texts.emplace_back(*tokenizer, r.stop, live.prompt.back());
      c->prev.push_back(live.prompt.back());
    }
    c->out.resize(std::size_t(r.n));
    c->open = r.n;
    c->client_socket =
        find_client_socket(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    try {
      c->stream = e.submit(std::move(live));
    } catch (const QueueFull& full) {
      res.set_header("Retry-After", "1");
      throw ApiError(429, fmt::format("the server is busy: {}", full.what()), "",
                     "server_error", "queue_full");
    } catch (const ParameterError& bad) {
      throw ApiError(400, bad.what(), bad.parameter());
    } catch (const Error& bad) {
      throw ApiError(400, bad.what());
    }
    res.set_chunked_content_provider(
        r.stream ? "text/event-stream" : "application/json",
        [c](std::size_t, httplib::DataSink& sink) { return c->provide(sink); },
        [c](bool) {
          // The connection ended before the response did (client gone, write timeout).
          if (!c->finished) c->engine->cancel(c->stream);
        });
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    ready();
    const Json body = parse_body(req);
    const char* key = body.contains("content") ? "content" : "prompt";
    if (!body.contains(key) || !body.at(key).is_string())
      throw ApiError(400, "content: expected a string", "content");
    EncodeOptions options;
    if (body.contains("add_special")) {
      if (!body.at("add_special").is_boolean())
        throw ApiError(400, "add_special: expected a boolean", "add_special");
      options.add_bos = body.at("add_special").get<bool>();
    }
    const std::vector<int> ids = tokenizer->encode(body.at(key).get<std::string>(), options);
    res.set_content(dump_json({{"tokens", ids}, {"count", ids.size()}}), "application/json");
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    ready();
    const Json body = parse_body(req);
    if (!body.contains("tokens") || !body.at("tokens").is_array())
      throw ApiError(400, "tokens: expected an array of token ids", "tokens");
    std::vector<int> ids;
    for (const Json& t : body.at("tokens")) {
      if (!t.is_number_integer() || t.get<long long>() < 0 ||
          t.get<long long>() >= tokenizer->vocab_size())
        throw ApiError(400, fmt::format("tokens: expected ids in [0, {})",
                                        tokenizer->vocab_size()), "tokens");
      ids.push_back(static_cast<int>(t.get<long long>()));
    }
    res.set_content(dump_json({{"content", tokenizer->decode(ids)}}), "application/json");
  }

  // Every handler answers an ApiError (or any other error) with OpenAI's error object.
  template <class Handler>
  httplib::Server::Handler guarded(Handler handler) {
    return [handler](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, e.what(), "", "server_error"));
      }
    };
  }

  void routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (config.api_key.empty() || req.path == "/health")
        return httplib::Server::HandlerResponse::Unhandled;
      if (req.get_header_value("Authorization") == "Bearer " + config.api_key)
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, ApiError(401, "a valid API key is required (Authorization: Bearer KEY)",
                               "", "authentication_error", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      const int status = res.status;
      const std::string message = status == 413 ? "the request body is too large"
                                  : status == 404 ? "no such route"
                                                  : fmt::format("HTTP status {}", status);
      send_error(res, ApiError(status, message));
    });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const bool ok = engine.load() != nullptr;
      res.status = ok ? 200 : 503;
      res.set_content(ok ? R"({"status":"ok"})" : R"({"status":"loading"})", "application/json");
    });
    http.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) {
      ready();
      const Json model = {{"id", config.model_name},
                          {"object", "model"},
                          {"created", 0},
                          {"owned_by", "inferlab"},
                          {"max_model_len", ready().context()}};
      res.set_content(dump_json({{"object", "list"}, {"data", Json::array({model})}}),
                      "application/json");
    }));
    http.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
      res.set_content(prometheus_text(ready().metrics(), config.model_name),
                      "text/plain; version=0.0.4");
    }));
    http.Post("/v1/completions",
              guarded([this](const auto& req, auto& res) { completion(req, res, false); }));
    http.Post("/v1/chat/completions",
              guarded([this](const auto& req, auto& res) { completion(req, res, true); }));
    http.Post("/tokenize", guarded([this](const auto& req, auto& res) { tokenize(req, res); }));
    http.Post("/detokenize",
              guarded([this](const auto& req, auto& res) { detokenize(req, res); }));
  }
};

OpenAIServer::OpenAIServer(const ServerConfig& config) : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  httplib::Server& http = impl_->http;
  const int threads = std::max(1, config.http_threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };
  http.set_payload_max_length(config.max_body_bytes);
  // A client that stops reading (or sending) is dropped after 10 s, its request cancelled.
  http.set_read_timeout(10, 0);
  http.set_write_timeout(10, 0);
  impl_->routes();
  // httplib's options hook sees the socket before its bind() and listen(sock, 5): keep its
  // defaults (SO_REUSEPORT) and note the socket, to listen on it again with a larger backlog.
  http.set_socket_options([impl = impl_.get()](socket_t sock) {
    httplib::default_socket_options(sock);
    impl->listen_socket = sock;
  });
  if (config.port == 0) {
    impl_->port = http.bind_to_any_port(config.host);
    if (impl_->port < 0) throw Error(fmt::format("cannot bind {} (any port)", config.host));
  } else {
    if (!http.bind_to_port(config.host, config.port))
      throw ParameterError("port", fmt::format("{}: cannot bind {}:{} (in use, or not an "
                                               "address of this machine)",
                                               config.port, config.host, config.port));
    impl_->port = config.port;
  }
  if (::listen(impl_->listen_socket, kListenBacklog) != 0)
    throw Error(fmt::format("cannot listen on {}:{} with a backlog of {}: {}", config.host,
                            impl_->port, kListenBacklog, std::strerror(errno)));
}

OpenAIServer::~OpenAIServer() = default;

int OpenAIServer::port() const { return impl_->port; }

void OpenAIServer::attach(LiveEngine& engine, const Tokenizer& tokenizer,
                          const ChatTemplate& chat_template, const std::string& model_name) {
  if (impl_->config.model_name.empty()) impl_->config.model_name = model_name;
  if (impl_->config.model_name.empty()) impl_->config.model_name = "inferlab";
  impl_->tokenizer = &tokenizer;
  impl_->chat_template = &chat_template;
  impl_->token_bytes = token_byte_strings(tokenizer);
  impl_->trie = std::make_unique<TokenTrie>(impl_->token_bytes);
  int end = tokenizer.eos_id();
  if (end < 0 || !tokenizer.is_end_of_generation(end))
    end = tokenizer.end_of_generation_ids().empty() ? -1 : tokenizer.end_of_generation_ids()[0];
  impl_->end_token = end;
  impl_->engine.store(&engine);
}

void OpenAIServer::listen() {
  impl_->listen_entered = true;
  if (!impl_->stop_requested) impl_->http.listen_after_bind();
  impl_->listen_returned = true;
}

void OpenAIServer::stop() {
  impl_->stop_requested = true;
  if (impl_->listen_entered)
    while (!impl_->listen_returned && !impl_->http.is_running()) std::this_thread::yield();
  impl_->http.stop();
}

}  // namespace inferlab
