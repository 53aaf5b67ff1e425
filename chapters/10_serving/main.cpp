// Chapter 10: serving — the engine behind an OpenAI-compatible HTTP server.
//
// Binds the address first (GET /health answers 503 while the model loads), loads the model,
// starts the engine thread (continuous batching of chapter 04, paged KV of chapter 05, the
// prefix cache of chapter 06) and serves the OpenAI API until SIGINT or SIGTERM, then cancels
// what is running, stops accepting and exits 0. The server is http/openai_server.hpp; the
// engine thread is serving/live_engine.hpp.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/http/openai_server.hpp"
#include "inferlab/runtime/chat.hpp"
#include "inferlab/runtime/kv_pool.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServerConfig server;
  int max_seqs = 16;
  int max_batched_tokens = 512;
  int max_queue = 256;
  double kv_memory_mib = 0.0;  // 0: max_seqs full contexts
  int block_size = 16;
  std::string cache = "radix";
  std::string kv_dtype = "f32";
  std::string chat_template;
  double max_body_mib = 1.0;
};

constexpr double kMiB = 1024.0 * 1024.0;

// The model's own chat template, else the one named, else ChatML (a base model has none; its
// chat answers are then only as good as a base model's).
ChatTemplate server_chat_template(const Tokenizer& tokenizer, const std::string& name) {
  if (!name.empty() || !tokenizer.chat_template().empty())
    return choose_chat_template(tokenizer, name);
  std::printf("chat:      the model has no chat template: /v1/chat/completions uses chatml\n");
  return ChatTemplate::named("chatml");
}

int run(Options o) {
  // Every thread started from here on inherits the blocked signals; one thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  o.server.max_body_bytes = std::size_t(o.max_body_mib * kMiB);
  OpenAIServer server(o.server);
  std::thread http([&] { server.listen(); });
  std::printf("InferLab chapter 10: serving on http://%s:%d (GET /health: 503 while loading)\n",
              o.server.host.c_str(), server.port());
  std::fflush(stdout);
  std::optional<LoadedModel> m;
  std::optional<LiveEngine> engine;
  std::optional<ChatTemplate> chat;
  try {
    m = load_model(o.gen);
    chat = server_chat_template(*m->tokenizer, o.chat_template);
    LiveEngineConfig config;
    config.scheduler.max_seqs = o.max_seqs;
    config.scheduler.max_batched_tokens = o.max_batched_tokens;
    config.kv_type = parse_kv_dtype(o.kv_dtype);
    config.device = parse_device(o.gen.device);
    config.max_queue = o.max_queue;
    const ModelConfig& mc = m->model->config();
    const std::size_t per_token = kv_storage_bytes_per_token(mc, config.kv_type);
    config.memory.allocator = Allocator::paged;
    config.memory.block_size = o.block_size;
    config.memory.prefix_cache = parse_prefix_cache(o.cache);
    config.memory.budget_bytes =
        o.kv_memory_mib > 0 ? std::size_t(o.kv_memory_mib * kMiB)
                            : per_token * std::size_t(mc.seq_len) * std::size_t(o.max_seqs);
    engine.emplace(*m->model, *m->tokenizer, config);
    print_run_header("InferLab chapter 10: serving", *m, o.gen,
                     fmt::format("server:    {} slots, {} tokens per step, KV {:.1f} MiB in "
                                 "blocks of {}, prefix cache {}, queue {}, chat template {}",
                                 o.max_seqs, o.max_batched_tokens,
                                 double(config.memory.budget_bytes) / kMiB, o.block_size,
                                 o.cache, o.max_queue, chat->name()));
  } catch (...) {
    server.stop();
    http.join();
    throw;
  }
  // The model file's name without its folder and extension, as clients will name it.
  server.attach(*engine, *m->tokenizer, *chat,
                std::filesystem::path(m->model->name()).stem().string());
  std::printf("ready: POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize; "
              "GET /v1/models, /health, /metrics\n");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  std::printf("signal %d: cancelling the running requests and stopping\n", signal);
  std::fflush(stdout);
  engine->shutdown();  // every open request ends now, so the workers finish
  server.stop();
  http.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 10: an OpenAI-compatible server"};
  Options o;
  app.add_option("--model", o.gen.model, "model file (path or name in the models folder)");
  app.add_option("--tokenizer", o.gen.tokenizer, "tokenizer file (default: the model's)");
  app.add_option("--synthetic", o.gen.synthetic, "a named shape with random weights");
  app.add_option("--threads", o.gen.threads, "CPU threads (0: OpenMP's default)")
      ->check(integer_in(0, 4096));
  app.add_option("--device", o.gen.device, "cpu or cuda")->capture_default_str();
  app.add_option("--host", o.server.host, "address to bind")->capture_default_str();
  app.add_option("--port", o.server.port, "TCP port (0: a free one, printed)")
      ->check(integer_in(0, 65535))
      ->capture_default_str();
  app.add_option("--api-key", o.server.api_key, "require Authorization: Bearer KEY (not /health)");
  app.add_option("--model-name", o.server.model_name,
                 "the model id clients see (default: the model file's name)");
  app.add_option("--max-seqs", o.max_seqs, "sequences in the batch at once")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--max-batched-tokens", o.max_batched_tokens, "tokens forwarded per step")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-queue", o.max_queue, "requests waiting at most; more get 429")
      ->check(integer_in(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--kv-memory", o.kv_memory_mib,
                 "paged KV memory in MiB (default: --max-seqs full contexts)")
      ->check(finite_in(1e-6, 1e9));
  app.add_option("--block-size", o.block_size, "positions per KV block")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--cache", o.cache, "prefix cache: radix, hash or off")
      ->check(CLI::IsMember({"radix", "hash", "off"}))
      ->capture_default_str();
  app.add_option("--kv-dtype", o.kv_dtype, "KV storage type: f32, f16 or int8")
      ->check(CLI::IsMember({"f32", "f16", "int8"}))
      ->capture_default_str();
  app.add_option("--chat-template", o.chat_template,
                 "built-in chat template (default: the model's, else chatml)");
  app.add_option("--max-body", o.max_body_mib, "largest request body in MiB (larger: 413)")
      ->check(finite_in(1e-3, 1024))
      ->capture_default_str();
  app.add_option("--max-tokens-cap", o.server.limits.max_tokens,
                 "largest max_tokens a request may ask for")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--http-threads", o.server.http_threads,
                 "HTTP worker threads (each open request holds one)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
