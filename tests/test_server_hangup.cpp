// Chapter 10's server, in-process on a free 127.0.0.1 port: a client that hangs up while its
// request waits (queued behind another, or running, streamed or not) has its request cancelled
// at once, before it generates another token, and its KV blocks freed.
//
// The engine is driven step by step, so nothing depends on the machine's speed: a first request
// A, submitted to the engine directly, carries a TokenFilter that parks the engine thread at
// every one of A's steps until the test lets it pass. The client B hangs up by shutting down its
// sending side: the server sees the FIN a closing client sends, and its answer (it closes the
// connection once it has cancelled B) tells the test when to let the engine step again.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <httplib.h>

#include "inferlab/http/openai_server.hpp"
#include "inferlab/model/model.hpp"

using namespace inferlab;

namespace {

constexpr auto kDeadline = std::chrono::seconds(60);  // bounds a failing run only

// Lets the engine thread take one step at a time.
class StepGate {
 public:
  // Engine thread: parks until a step is allowed.
  void pass() {
    std::unique_lock lock(mu_);
    parked_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_ || allowed_ > 0; });
    if (!open_) --allowed_;
    parked_ = false;
    ++passed_;
  }
  // Waits until the engine is parked at a step.
  void wait_parked() {
    std::unique_lock lock(mu_);
    REQUIRE(cv_.wait_for(lock, kDeadline, [&] { return parked_ && allowed_ == 0; }));
  }
  // Lets one step run and waits until the engine is parked at the next one.
  void step() {
    std::unique_lock lock(mu_);
    const long target = passed_ + 1;
    ++allowed_;
    cv_.notify_all();
    REQUIRE(cv_.wait_for(lock, kDeadline, [&] { return passed_ >= target && parked_; }));
  }
  // Lets the engine run freely from now on.
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Steps passed: while parked, the tokens the gated request has generated.
  long passed() {
    std::lock_guard lock(mu_);
    return passed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  long allowed_ = 0;
  long passed_ = 0;
  bool parked_ = false;
  bool open_ = false;
};

class GateFilter : public TokenFilter {
 public:
  explicit GateFilter(std::shared_ptr<StepGate> gate) : gate_(std::move(gate)) {}
  bool mask(std::span<float>) override {
    gate_->pass();
    return true;  // every token allowed
  }
  void accept(int) override {}

 private:
  std::shared_ptr<StepGate> gate_;
};

// The server on stories260K's shape (random weights) with a gated first request running.
struct Harness {
  Model model = make_synthetic_model("stories260K");
  Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  ChatTemplate chat = ChatTemplate::named("chatml");
  std::shared_ptr<StepGate> gate = std::make_shared<StepGate>();
  LiveEngine engine;
  OpenAIServer server;
  std::thread http;
  std::shared_ptr<RequestStream> first;

  static LiveEngineConfig engine_config(int max_seqs) {
    LiveEngineConfig c;
    c.scheduler.max_seqs = max_seqs;
    c.memory.allocator = Allocator::paged;
    c.memory.budget_bytes = std::size_t(8) << 20;
    return c;
  }
  static ServerConfig server_config() {
    ServerConfig c;
    c.port = 0;
    c.http_threads = 8;
    return c;
  }

  explicit Harness(int max_seqs)
      : engine(model, tok, engine_config(max_seqs)), server(server_config()) {
    http = std::thread([this] { server.listen(); });
    server.attach(engine, tok, chat, "stories260K");
    LiveRequest a;
    a.prompt = tok.encode("Once upon a time", /*bos=*/true);
    a.max_tokens = 400;  // far more steps than the test lets it take
    a.ignore_eos = true;
    a.sampling.temperature = 0.0f;
    a.make_filter = [gate = gate] { return std::make_unique<GateFilter>(gate); };
    first = engine.submit(a);
  }
  ~Harness() {
    gate->open();
    engine.shutdown();
    server.stop();
    http.join();
  }

  // The value of /metrics' inferlab:NAME, summed over its label sets that contain @p label.
  double metric(const std::string& name, const std::string& label = "") {
    httplib::Client client("127.0.0.1", server.port());
    const auto res = client.Get("/metrics");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    std::istringstream lines(res->body);
    double sum = 0.0;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("inferlab:" + name + "{", 0) == 0 && line.find(label) != std::string::npos)
        sum += std::stod(line.substr(line.rfind(' ') + 1));
    return sum;
  }
};

// A connected TCP socket to 127.0.0.1:port.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Waits for what the server sends on @p fd and appends it to @p got; false once the server has
// closed the connection.
bool read_some(int fd, std::string& got) {
  pollfd p{fd, POLLIN, 0};
  REQUIRE(::poll(&p, 1, int(std::chrono::milliseconds(kDeadline).count())) == 1);
  char buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n <= 0) return false;  // closed (or reset)
  got.append(buf, std::size_t(n));
  return true;
}

}  // namespace

TEST_CASE("a client that hangs up is cancelled before its next token, queued or running",
          "[server]") {
  const bool queued = GENERATE(true, false);
  const bool streamed = GENERATE(false, true);
  CAPTURE(queued, streamed);
  Harness h(queued ? 1 : 2);  // one slot: B waits behind A; two: B runs beside it
  h.gate->wait_parked();      // A runs

  const int b = connect_to(h.server.port());
  const std::string body = fmt::format(
      R"({{"prompt": "Once upon a time", "max_tokens": 300, "ignore_eos": true, )"
      R"("stream": {}}})",
      streamed ? "true" : "false");
  const std::string request = fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
  REQUIRE(::send(b, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size()));
  // The response's header is written after the request was submitted to the engine.
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos) REQUIRE(read_some(b, got));
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  // One step ends the parked one, the next takes B from the inbox; its numbers are published
  // when the engine parks again.
  h.gate->step();
  h.gate->step();
  CHECK(h.metric("num_requests_waiting") == (queued ? 1 : 0));
  CHECK(h.metric("num_requests_running") == (queued ? 1 : 2));
  const double b_tokens = h.metric("generation_tokens_total") - double(h.gate->passed());
  CHECK(b_tokens == (queued ? 0 : 1));

  // B hangs up. The server closes the connection once it has cancelled B's request.
  REQUIRE(::shutdown(b, SHUT_WR) == 0);
  while (read_some(b, got)) {
  }
  ::close(b);
  // The step in flight ends (B's token in it, if B runs, was being computed already); the next
  // one takes the cancellation: B leaves the queue or the batch and frees its blocks.
  h.gate->step();
  h.gate->step();
  CHECK(h.metric("request_success_total", "cancelled") == 1);  // B
  CHECK(h.metric("request_success_total") == 1);
  CHECK(h.metric("num_requests_waiting") == 0);
  CHECK(h.metric("num_requests_running") == 1);  // A
  const double b_final = h.metric("generation_tokens_total") - double(h.gate->passed());
  CHECK(b_final == b_tokens + (queued ? 0 : 1));

  // A ends too: every block is free.
  h.gate->open();
  h.engine.cancel(h.first);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while ((h.metric("num_requests_running") != 0 || h.metric("kv_blocks_used") != 0) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(h.metric("num_requests_running") == 0);
  CHECK(h.metric("kv_blocks_used") == 0);
}
