// Chapter 10's core: the streamed text (UTF-8 holdback, stop strings), the OpenAI API's request
// checks and response framing, the metrics text, and the live engine (greedy tokens, cancel,
// back-pressure) on the synthetic stories260K model.
#include <chrono>
#include <thread>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/live_engine.hpp"
#include "inferlab/serving/openai_api.hpp"
#include "inferlab/serving/server_metrics.hpp"
#include "inferlab/serving/text_stream.hpp"

using namespace inferlab;
using Json = nlohmann::json;

namespace {

// The byte token of @p byte in a llama2.c-style vocabulary (<0x00> is id 3).
int byte_token(unsigned char byte) { return 3 + int(byte); }

// Feeds @p text one byte token at a time; returns what the stream sent, chunk by chunk.
std::vector<std::string> feed_bytes(TextStream& stream, const std::string& text) {
  std::vector<std::string> sent;
  for (unsigned char c : text) sent.push_back(stream.push(byte_token(c)));
  return sent;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const std::string& p : parts) all += p;
  return all;
}

// Every event of @p stream until all its choices finished (bounded: 30 s).
std::vector<TokenEvent> drain(RequestStream& stream) {
  std::vector<TokenEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!stream.wait(events, std::chrono::milliseconds(100)))
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  return events;
}

}  // namespace

TEST_CASE("TextStream holds back a character split over byte tokens", "[unit][server]") {
  const Tokenizer tok = Tokenizer::synthetic(512);
  TextStream stream(tok, {}, kBosToken);
  // "é" is C3 A9 and "€" is E2 82 AC: nothing is sent until the last byte of each.
  const std::vector<std::string> sent = feed_bytes(stream, "a\xC3\xA9\xE2\x82\xAC" "b");
  REQUIRE(sent.size() == 7);
  CHECK(sent[1].empty());
  CHECK(sent[2] == "\xC3\xA9");
  CHECK(sent[3].empty());
  CHECK(sent[4].empty());
  CHECK(sent[5] == "\xE2\x82\xAC");
  CHECK(joined(sent) + stream.finish() == "a\xC3\xA9\xE2\x82\xAC" "b");
}

TEST_CASE("TextStream catches a stop string split over tokens and never sends it",
          "[unit][server]") {
  const Tokenizer tok = Tokenizer::synthetic(512);
  SECTION("split byte by byte") {
    TextStream stream(tok, {"STOP"}, kBosToken);
    const std::vector<std::string> sent = feed_bytes(stream, "abcSTOPdef");
    CHECK(joined(sent) == "abc");
    CHECK(stream.stopped());
    CHECK(stream.finish().empty());
    CHECK(stream.push(byte_token('x')).empty());  // nothing after a stop
  }
  SECTION("a prefix that does not complete is sent once it is known") {
    TextStream stream(tok, {"STOP"}, kBosToken);
    const std::vector<std::string> sent = feed_bytes(stream, "aSTx");
    CHECK(sent[1].empty());  // "S" could start STOP
    CHECK(sent[2].empty());  // "ST" too
    CHECK(sent[3] == "STx");
    CHECK_FALSE(stream.stopped());
  }
  SECTION("held back at the end: sent by finish()") {
    TextStream stream(tok, {"STOP"}, kBosToken);
    CHECK(joined(feed_bytes(stream, "abST")) == "ab");
    CHECK(stream.finish() == "ST");
  }
  SECTION("the earliest of several stop strings wins") {
    TextStream stream(tok, {"lo", "hel"}, kBosToken);
    CHECK(joined(feed_bytes(stream, "xhello")) == "x");
    CHECK(stream.stopped());
  }
  SECTION("a stop string ending inside a multi-byte character's tokens") {
    TextStream stream(tok, {"\xC3\xA9!"}, kBosToken);
    CHECK(joined(feed_bytes(stream, "caf\xC3\xA9!?")) == "caf");
    CHECK(stream.stopped());
  }
}

TEST_CASE("stop_prefix_overlap is the longest suffix that starts a stop string",
          "[unit][server]") {
  CHECK(stop_prefix_overlap("hello wor", {"world"}) == 3);
  CHECK(stop_prefix_overlap("hello", {"world"}) == 0);
  CHECK(stop_prefix_overlap("aab", {"ab", "abc"}) == 2);
  CHECK(stop_prefix_overlap("", {"x"}) == 0);
}

TEST_CASE("parse_completion_request reads OpenAI's fields", "[unit][server]") {
  const ApiLimits limits;
  const Json body = {{"model", "m"},
                     {"prompt", "Once"},
                     {"max_tokens", 7},
                     {"temperature", 0.5},
                     {"top_p", 0.9},
                     {"top_k", 40},
                     {"min_p", 0.05},
                     {"seed", 3},
                     {"stop", "\n"},
                     {"n", 2},
                     {"logprobs", 2},
                     {"presence_penalty", 0.5},
                     {"frequency_penalty", -0.5},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"ignore_eos", true},
                     {"some_future_field", {1, 2}}};  // unknown fields are ignored
  const CompletionRequest r = parse_completion_request(body, /*chat=*/false, limits);
  CHECK(r.prompt == "Once");
  CHECK(r.max_tokens == 7);
  CHECK(r.sampling.temperature == 0.5f);
  CHECK(r.sampling.top_p == 0.9f);
  CHECK(r.sampling.top_k == 40);
  CHECK(r.sampling.min_p == 0.05f);
  CHECK(r.sampling.seed == 3);
  CHECK(r.seed_given);
  CHECK(r.ignore_eos);
  CHECK(r.stop == std::vector<std::string>{"\n"});
  CHECK(r.n == 2);
  CHECK(r.top_logprobs == 2);
  CHECK(r.sampling.presence_penalty == 0.5f);
  CHECK(r.sampling.frequency_penalty == -0.5f);
  CHECK(r.stream);
  CHECK(r.include_usage);

  const Json chat = {{"messages",
                      {{{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"},
                        {"content", {{{"type", "text"}, {"text", "Hi"}}}}}}},
                     {"max_completion_tokens", 5},
                     {"logprobs", true},
                     {"top_logprobs", 3},
                     {"stop", {"a", "b"}},
                     {"response_format",
                      {{"type", "json_schema"},
                       {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}}}}}}}};
  const CompletionRequest c = parse_completion_request(chat, /*chat=*/true, limits);
  REQUIRE(c.messages.size() == 2);
  CHECK(c.messages[1].content == "Hi");
  CHECK(c.max_tokens == 5);
  CHECK(c.top_logprobs == 3);
  CHECK(c.stop.size() == 2);
  CHECK(c.constraint == OutputConstraint::json_schema);
  CHECK(Json::parse(c.constraint_text) == Json{{"type", "object"}});
  CHECK(c.sampling.temperature == 1.0f);  // OpenAI's default
}

TEST_CASE("parse_completion_request answers 400 naming the field", "[unit][server]") {
  const ApiLimits limits;
  auto param_of = [&](Json body, bool chat) -> std::string {
    try {
      parse_completion_request(body, chat, limits);
    } catch (const ApiError& e) {
      CHECK(e.status() == 400);
      CHECK(e.type() == "invalid_request_error");
      return e.param();
    }
    return "accepted";
  };
  const Json ok = {{"prompt", "x"}};
  auto with = [&](const char* key, Json value) {
    Json b = ok;
    b[key] = value;
    return b;
  };
  CHECK(param_of(with("max_tokens", "10"), false) == "max_tokens");
  CHECK(param_of(with("max_tokens", 0), false) == "max_tokens");
  CHECK(param_of(with("max_tokens", limits.max_tokens + 1), false) == "max_tokens");
  CHECK(param_of(with("temperature", -0.1), false) == "temperature");
  CHECK(param_of(with("temperature", 2.5), false) == "temperature");
  CHECK(param_of(with("top_p", 0), false) == "top_p");
  CHECK(param_of(with("top_p", 1.5), false) == "top_p");
  CHECK(param_of(with("min_p", 2), false) == "min_p");
  CHECK(param_of(with("n", 0), false) == "n");
  CHECK(param_of(with("n", 1.5), false) == "n");
  CHECK(param_of(with("stop", 3), false) == "stop");
  CHECK(param_of(with("stop", {"a", "b", "c", "d", "e"}), false) == "stop");
  CHECK(param_of(with("presence_penalty", 3), false) == "presence_penalty");
  CHECK(param_of(with("stream", "yes"), false) == "stream");
  CHECK(param_of(with("stream_options", {{"include_usage", true}}), false) == "stream_options");
  CHECK(param_of(with("logprobs", 6), false) == "logprobs");
  CHECK(param_of(with("response_format", {{"type", "xml"}}), false) == "response_format.type");
  CHECK(param_of(with("grammar", 1), false) == "grammar");
  CHECK(param_of({{"prompt", 5}}, false) == "prompt");
  CHECK(param_of(Json::object(), false) == "prompt");
  CHECK(param_of({{"messages", Json::array()}}, true) == "messages");
  CHECK(param_of({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}, true) ==
        "messages[0].role");
  CHECK(param_of({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}},
                 true) == "top_logprobs");
  CHECK(param_of(with("max_tokens", nullptr), false) == "accepted");  // null: the default
}

TEST_CASE("error_json is OpenAI's error object", "[unit][server]") {
  const Json e = error_json(ApiError(400, "n: 0 is outside [1, 16]", "n"));
  CHECK(e == Json{{"error",
                   {{"message", "n: 0 is outside [1, 16]"},
                    {"type", "invalid_request_error"},
                    {"param", "n"},
                    {"code", nullptr}}}});
}

TEST_CASE("SSE chunks: framing, the role delta, the finish chunk, the usage chunk",
          "[unit][server]") {
  const ResponseHeader chat{true, "chatcmpl-1", 1700000000, "m", false};
  CHECK(sse_event(Json{{"a", 1}}) == "data: {\"a\":1}\n\n");
  CHECK(kSseDone == "data: [DONE]\n\n");
  CHECK(sse_event(chunk_json(chat, 0, "assistant", "", {}, FinishReason::none, false)) ==
        "data: {\"choices\":[{\"delta\":{\"content\":\"\",\"role\":\"assistant\"},"
        "\"finish_reason\":null,\"index\":0,\"logprobs\":null}],\"created\":1700000000,"
        "\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n");
  const Json last = chunk_json(chat, 1, "", "", {}, FinishReason::length, true);
  CHECK(last["choices"][0]["delta"] == Json::object());
  CHECK(last["choices"][0]["finish_reason"] == "length");
  CHECK(last["usage"].is_null());
  const Json usage = usage_chunk_json(chat, 5, 7);
  CHECK(usage["choices"] == Json::array());
  CHECK(usage["usage"] == Json{{"prompt_tokens", 5}, {"completion_tokens", 7},
                               {"total_tokens", 12}});
  const ResponseHeader text{false, "cmpl-1", 1, "m", false};
  const Json chunk = chunk_json(text, 0, "", "hi", {}, FinishReason::none, false);
  CHECK(chunk["object"] == "text_completion");
  CHECK(chunk["choices"][0]["text"] == "hi");
  // Invalid UTF-8 (a token that is half a character) is replaced, not thrown on.
  CHECK(sse_event(Json{{"t", std::string("\xC3")}}) == "data: {\"t\":\"\xEF\xBF\xBD\"}\n\n");
}

TEST_CASE("completion_json sums the usage over the choices", "[unit][server]") {
  const ResponseHeader chat{true, "chatcmpl-2", 1, "m", false};
  const std::vector<ChoiceOutput> choices = {{"a", FinishReason::stop, {}, 3},
                                             {"b", FinishReason::length, {}, 4}};
  const Json r = completion_json(chat, choices, 10);
  CHECK(r["object"] == "chat.completion");
  CHECK(r["choices"][1]["message"] == Json{{"role", "assistant"}, {"content", "b"}});
  CHECK(r["choices"][0]["finish_reason"] == "stop");
  CHECK(r["usage"]["completion_tokens"] == 7);
  CHECK(r["usage"]["total_tokens"] == 17);
}

TEST_CASE("prometheus_text writes gauges, counters and cumulative histograms",
          "[unit][server]") {
  ServerMetrics m;
  m.requests_running = 2;
  m.ttft.observe(0.003);
  m.ttft.observe(100.0);
  const std::string text = prometheus_text(m, "stories");
  CHECK(text.find("inferlab:num_requests_running{model_name=\"stories\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE inferlab:time_to_first_token_seconds histogram") != std::string::npos);
  CHECK(text.find("inferlab:time_to_first_token_seconds_bucket{model_name=\"stories\",le="
                  "\"0.001\"} 0\n") != std::string::npos);
  CHECK(text.find("inferlab:time_to_first_token_seconds_bucket{model_name=\"stories\",le="
                  "\"0.005\"} 1\n") != std::string::npos);
  CHECK(text.find("inferlab:time_to_first_token_seconds_bucket{model_name=\"stories\",le="
                  "\"+Inf\"} 2\n") != std::string::npos);
  CHECK(text.find("inferlab:time_to_first_token_seconds_count{model_name=\"stories\"} 2\n") !=
        std::string::npos);
}

TEST_CASE("LiveEngine: greedy tokens equal the chapter 04 engine's, n choices, logprobs",
          "[server]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  Request r;
  r.prompt = "Once upon a time";
  r.max_tokens = 12;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = false;
  const EngineRun offline = run_real({r}, SchedulerConfig{}, RealEngine(&model, &tok));
  const std::vector<int>& expected = offline.requests[0].tokens;

  LiveEngineConfig config;
  config.memory.allocator = Allocator::paged;
  config.memory.budget_bytes = std::size_t(8) << 20;
  config.memory.prefix_cache = PrefixCacheKind::radix;
  LiveEngine engine(model, tok, config);
  LiveRequest live;
  live.prompt = tok.encode(r.prompt, /*bos=*/true);
  live.max_tokens = 12;
  live.n = 2;
  live.sampling.temperature = 0.0f;
  live.top_logprobs = 2;
  const auto stream = engine.submit(live);
  const std::vector<TokenEvent> events = drain(*stream);
  for (int choice = 0; choice < 2; ++choice) {
    std::vector<int> tokens = live.prompt;
    FinishReason finish = FinishReason::none;
    for (const TokenEvent& e : events) {
      if (e.choice != choice) continue;
      tokens.push_back(e.token);
      REQUIRE(e.top.size() == 2);
      CHECK(e.top[0].first == e.token);  // greedy: the most probable token
      CHECK(e.logprob == Approx(e.top[0].second));
      CHECK(e.logprob <= 0.0f);
      finish = e.finish;
    }
    CHECK(tokens == expected);
    CHECK(finish == (offline.requests[0].stop_reason == StopReason::eos ? FinishReason::stop
                                                                        : FinishReason::length));
  }
}

TEST_CASE("LiveEngine: a cancelled request frees its blocks, a full queue refuses",
          "[server]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  LiveEngineConfig config;
  config.memory.allocator = Allocator::paged;
  config.memory.budget_bytes = std::size_t(8) << 20;
  config.scheduler.max_seqs = 4;
  LiveEngine engine(model, tok, config);
  LiveRequest live;
  live.prompt = tok.encode("Once upon a time", /*bos=*/true);
  live.max_tokens = 400;
  live.sampling.temperature = 1.0f;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) {  // 4 run, 2 wait
    live.sampling.seed = std::uint64_t(i + 1);
    streams.push_back(engine.submit(live));
  }
  for (auto& s : streams) engine.cancel(s);
  for (auto& s : streams) {
    const std::vector<TokenEvent> events = drain(*s);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().finish != FinishReason::none);
  }
  // The engine publishes its numbers after the step that took the cancellations.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ServerMetrics m = engine.metrics();
  while ((m.requests_running != 0 || m.kv_blocks_used != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = engine.metrics();
  }
  CHECK(m.requests_running == 0);
  CHECK(m.requests_waiting == 0);
  CHECK(m.kv_blocks_used == 0);

  config.max_queue = 0;
  LiveEngine closed(model, tok, config);
  CHECK_THROWS_AS(closed.submit(live), QueueFull);
  CHECK(closed.metrics().rejected_queue_full == 1);
  live.n = config.scheduler.max_seqs + 1;  // more choices than slots: they could never run
  CHECK_THROWS_WITH(engine.submit(live), Catch::Contains("batch slots"));
  try {
    engine.submit(live);
  } catch (const ParameterError& e) {
    CHECK(e.parameter() == "n");
  }
  live.n = 1;
  live.prompt.assign(std::size_t(model.config().seq_len) + 1, 5);
  CHECK_THROWS_WITH(engine.submit(live), Catch::Contains("context"));
}
