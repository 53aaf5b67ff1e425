// bench_serving's logic without the network: SSE parsing under every split, OpenAI stream
// chunks, request bodies, per-request records and the vLLM metrics against hand-computed values.
#include <catch2/catch.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/bench_client.hpp"

using namespace inferlab;

namespace {

// The three events of a short completion stream, with "\r\n" line ends and a comment.
const std::string kStream =
    ": keep-alive\r\n\r\n"
    "data: {\"choices\":[{\"text\":\"Hel\",\"finish_reason\":null}]}\r\n\r\n"
    "data: {\"choices\":[{\"text\":\"lo\",\"finish_reason\":\"length\"}]}\r\n\r\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\r\n\r\n"
    "data: [DONE]\r\n\r\n";

std::vector<std::string> data_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) out.push_back(e.data);
  return out;
}

}  // namespace

TEST_CASE("SSE parser: the same events for every split of the stream", "[unit][bench_client]") {
  SseParser whole;
  const std::vector<std::string> expected = data_of(whole.feed(kStream));
  REQUIRE(expected.size() == 4);
  CHECK(expected[0] == "{\"choices\":[{\"text\":\"Hel\",\"finish_reason\":null}]}");
  CHECK(expected[3] == "[DONE]");
  CHECK(whole.pending_bytes() == 0);
  // Every cut into two pieces (one splits "\r\n" itself), then byte by byte.
  for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
    SseParser p;
    std::vector<std::string> got = data_of(p.feed(kStream.substr(0, cut)));
    for (const std::string& d : data_of(p.feed(kStream.substr(cut)))) got.push_back(d);
    INFO("cut at byte " << cut);
    REQUIRE(got == expected);
  }
  SseParser bytes;
  std::vector<std::string> got;
  for (const char c : kStream)
    for (const std::string& d : data_of(bytes.feed(std::string(1, c)))) got.push_back(d);
  CHECK(got == expected);
}

TEST_CASE("SSE parser: fields, multi-line data, bare CR and unfinished events",
          "[unit][bench_client]") {
  SseParser p;
  const std::vector<SseEvent> e =
      p.feed("event: error\ndata:a\ndata:  b\r\ndata\rid: 7\n\nretry: 5\n\ndata: tail");
  REQUIRE(e.size() == 1);  // the "retry" event has no data; "tail" has no blank line yet
  CHECK(e[0].event == "error");
  CHECK(e[0].data == "a\n b\n");  // one space dropped after the colon; "data" alone adds ""
  CHECK(p.pending_bytes() == 10);
  const std::vector<SseEvent> last = p.feed("\n\n");
  REQUIRE(last.size() == 1);
  CHECK(last[0].event.empty());
  CHECK(last[0].data == "tail");
}

TEST_CASE("OpenAI stream chunks: text, chat deltas, usage, errors, [DONE]",
          "[unit][bench_client]") {
  const StreamChunk c = parse_stream_chunk(
      R"({"choices":[{"index":0,"text":"é","finish_reason":"stop"}]})", ApiEndpoint::completions);
  CHECK(c.text == "é");
  CHECK(c.finish_reason == "stop");
  CHECK(c.prompt_tokens == -1);
  const StreamChunk role = parse_stream_chunk(
      R"({"choices":[{"delta":{"role":"assistant","content":null},"finish_reason":null}]})",
      ApiEndpoint::chat);
  CHECK(role.text.empty());
  CHECK(role.finish_reason.empty());
  CHECK(parse_stream_chunk(R"({"choices":[{"delta":{"content":"Hi"}}]})", ApiEndpoint::chat)
            .text == "Hi");
  const StreamChunk usage = parse_stream_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})",
      ApiEndpoint::chat);
  CHECK(usage.prompt_tokens == 12);
  CHECK(usage.completion_tokens == 34);
  CHECK(parse_stream_chunk("[DONE]", ApiEndpoint::chat).done);
  CHECK(parse_stream_chunk(R"({"error":{"message":"boom","type":"server_error"}})",
                           ApiEndpoint::completions)
            .error == "boom");
  CHECK_FALSE(parse_stream_chunk("{not json", ApiEndpoint::completions).error.empty());
}

TEST_CASE("Request bodies: text, token ids, made-up prompts, sampling, refusals",
          "[unit][bench_client]") {
  Request r;
  r.id = 3;
  r.prompt = "Once upon a time";
  r.max_tokens = 16;
  r.sampling.temperature = 0.0f;
  r.sampling.top_k = 40;
  r.sampling.seed = 45;
  r.ignore_eos = true;
  nlohmann::json b = openai_request_body(r, ApiEndpoint::completions, "m");
  CHECK(b["prompt"] == "Once upon a time");
  CHECK(b["model"] == "m");
  CHECK(b["max_tokens"] == 16);
  CHECK(b["stream"] == true);
  CHECK(b["stream_options"]["include_usage"] == true);
  CHECK(b["temperature"] == 0.0);
  CHECK(b["top_k"] == 40);
  CHECK_FALSE(b.contains("top_p"));  // neutral values are left to the server's defaults
  CHECK(b["seed"] == 45);
  CHECK(b["ignore_eos"] == true);
  b = openai_request_body(r, ApiEndpoint::chat, "m");
  CHECK(b["messages"] ==
        nlohmann::json::parse(R"([{"role":"user","content":"Once upon a time"}])"));
  CHECK_FALSE(b.contains("prompt"));

  r.prompt_ids = {5, 6, 7};
  CHECK(openai_request_body(r, ApiEndpoint::completions, "m")["prompt"] ==
        std::vector<int>{5, 6, 7});
  CHECK_THROWS_AS(openai_request_body(r, ApiEndpoint::chat, "m"), Error);
  r.prompt_ids.clear();
  // 6 made-up ids, none a BOS: a server passes ids through, and the client cannot know the
  // model's BOS (SmolLM2 has none; its id 1 is <|im_start|>).
  r.prompt_len = 6;
  const nlohmann::json ids = openai_request_body(r, ApiEndpoint::completions, "m")["prompt"];
  REQUIRE(ids.size() == 6);
  for (const auto& id : ids) CHECK((id >= 3 && id < 512));
  r.parent = 1;
  CHECK_THROWS_AS(openai_request_body(r, ApiEndpoint::completions, "m"), Error);
}

TEST_CASE("Stream recorder: outcomes and chunk times", "[unit][bench_client]") {
  StreamRecorder ok(7, 1.0, ApiEndpoint::completions);
  ok.on_status(200);
  ok.on_bytes(kStream.substr(0, 40), 1.5);   // ends inside the first data event: not timed
  ok.on_bytes(kStream.substr(40, 60), 1.7);  // completes "Hel"
  ok.on_bytes(kStream.substr(100), 2.0);     // "lo", usage and [DONE]
  CHECK(ok.text_chunks() == 2);
  const ClientRecord r = ok.finish(2.0, false, "");
  CHECK(r.outcome == ClientOutcome::completed);
  CHECK(r.id == 7);
  CHECK(r.text == "Hello");
  CHECK(r.chunk_times == std::vector<double>{1.7, 2.0});
  CHECK(r.finish_reason == "length");
  CHECK(r.prompt_tokens == 5);
  CHECK(r.output_tokens() == 3);  // the server's count, not the 2 chunks
  CHECK(r.error.empty());

  StreamRecorder cut(1, 0.0, ApiEndpoint::completions);
  cut.on_status(200);
  cut.on_bytes(kStream.substr(0, 120), 0.5);
  CHECK(cut.finish(0.5, false, "").error == "the stream ended without [DONE]");
  CHECK(cut.finish(0.5, true, "").outcome == ClientOutcome::disconnected);

  StreamRecorder full(2, 0.0, ApiEndpoint::completions);
  full.on_status(429);
  full.on_bytes(R"({"error":{"message":"queue full","type":"server_error"}})", 0.1);
  CHECK(full.finish(0.1, false, "").outcome == ClientOutcome::rejected);

  StreamRecorder bad(3, 0.0, ApiEndpoint::chat);
  bad.on_status(400);
  bad.on_bytes(R"({"error":{"message":"max_tokens must be >= 1","type":"invalid_request_error",)"
               R"("param":"max_tokens","code":null}})",
               0.1);
  const ClientRecord b = bad.finish(0.1, false, "");
  CHECK(b.outcome == ClientOutcome::failed);
  CHECK(b.error == "HTTP 400: max_tokens must be >= 1");

  StreamRecorder refused(4, 0.0, ApiEndpoint::chat);
  CHECK(refused.finish(0.0, false, "Connection").error == "HTTP 0: Connection");
}

TEST_CASE("Goodput SLO flags as vllm bench serve takes them", "[unit][bench_client]") {
  const BenchSlo s = parse_goodput({"ttft:200", "tpot:50.5"});
  CHECK(s.set);
  CHECK(s.ttft == Approx(0.2));
  CHECK(s.tpot == Approx(0.0505));
  CHECK(std::isinf(s.e2el));
  CHECK_FALSE(parse_goodput({}).set);
  for (const char* bad : {"ttft", "ttft:", "ttft:-1", "ttft:1ms", "foo:3", "ttft:nan"})
    CHECK_THROWS_AS(parse_goodput({bad}), ParameterError);
  CHECK_THROWS_AS(parse_goodput({"tpot:1", "tpot:2"}), ParameterError);
}

TEST_CASE("vLLM metrics from client records, by hand", "[unit][bench_client]") {
  // Request A: sent at 0, chunks at 0.5, 0.6, 0.8, 1.3; the server counted 5 tokens.
  //   TTFT 0.5, E2EL 1.3, TPOT (1.3 - 0.5) / 4 = 0.2, ITL 0.1, 0.2, 0.5.
  // Request B: sent at 1.0, chunks at 1.2, 1.3 and no usage (2 tokens, counted by chunks).
  //   TTFT 0.2, E2EL 0.3, TPOT 0.1, ITL 0.1.
  // Request C: sent at 2.0, one chunk at 2.4 (TTFT = E2EL = 0.4, no TPOT, no ITL).
  // One rejected and one disconnected request count apart and in no latency.
  using O = ClientOutcome;
  ClientRecord a{0, 0.0, 1.3, 200, O::completed, {0.5, 0.6, 0.8, 1.3}, "abcd", "length", 10, 5, ""};
  ClientRecord b{1, 1.0, 1.3, 200, O::completed, {1.2, 1.3}, "ef", "length", 6, -1, ""};
  ClientRecord c{2, 2.0, 2.4, 200, O::completed, {2.4}, "g", "stop", 4, 1, ""};
  ClientRecord d{3, 0.0, 0.01, 429, O::rejected, {}, "", "", -1, -1, ""};
  ClientRecord e{4, 0.0, 0.1, 200, O::disconnected, {0.1}, "x", "", -1, -1, ""};
  const std::vector<ClientRecord> records = {a, b, c, d, e};
  // SLO: TTFT <= 450 ms and TPOT <= 150 ms: B (0.2, 0.1) and C (0.4, none) meet it, A does not.
  const BenchMetrics m = bench_metrics(records, 4.0, parse_goodput({"ttft:450", "tpot:150"}));
  CHECK(m.completed == 3);
  CHECK(m.rejected == 1);
  CHECK(m.disconnected == 1);
  CHECK(m.failed == 0);
  // In flight: A, D and E from 0 (3), D ends at 0.01, E at 0.1, B joins at 1.0 (2); A and B
  // end at 1.3, C runs alone from 2.0.
  CHECK(m.peak_concurrency == 3);
  CHECK(m.input_tokens == 20);
  CHECK(m.output_tokens == 8);
  CHECK(m.request_throughput == Approx(0.75));
  CHECK(m.request_goodput == Approx(0.5));
  CHECK(m.output_throughput == Approx(2.0));
  CHECK(m.total_token_throughput == Approx(7.0));
  CHECK(m.ttft.summary.count == 3);
  CHECK(m.ttft.summary.mean == Approx((0.5 + 0.2 + 0.4) / 3));
  CHECK(m.ttft.summary.p50 == Approx(0.4));
  CHECK(m.ttft.summary.p90 == Approx(0.48));  // rank 1.8 of {0.2, 0.4, 0.5}
  // population std of {0.5, 0.2, 0.4}: mean 11/30, squares sum 0.14/3 -> sqrt(0.14/9)
  CHECK(m.ttft.std == Approx(std::sqrt(0.14 / 9)));
  CHECK(m.tpot.summary.count == 2);
  CHECK(m.tpot.summary.mean == Approx(0.15));
  CHECK(m.itl.summary.count == 4);  // 0.1, 0.2, 0.5 and 0.1, pooled
  CHECK(m.itl.summary.p50 == Approx(0.15));
  CHECK(m.itl.summary.mean == Approx(0.225));
  CHECK(m.e2el.summary.count == 3);
  CHECK(m.e2el.summary.mean == Approx((1.3 + 0.3 + 0.4) / 3));
  CHECK(m.e2el.summary.p99 == Approx(1.3 - 0.02 * 0.9));  // rank 1.98 of {0.3, 0.4, 1.3}
  CHECK_THROWS_AS(bench_metrics(records, 0.0, {}), Error);
}

TEST_CASE("Fault plan and text comparison", "[unit][bench_client]") {
  std::vector<Request> requests(300);
  for (Request& r : requests) r.max_tokens = 20;
  const std::vector<int> plan = disconnect_plan(requests, 1.0 / 3, 9);
  REQUIRE(plan.size() == 300);
  int hang_ups = 0;
  for (const int k : plan) {
    CHECK(k >= -1);
    CHECK(k < 20);
    hang_ups += k >= 0;
  }
  CHECK(hang_ups > 70);  // 100 expected; a binomial(300, 1/3) is below 70 with p < 1e-4
  CHECK(hang_ups < 130);
  CHECK(disconnect_plan(requests, 1.0 / 3, 9) == plan);  // same seed, same plan
  CHECK(disconnect_plan(requests, 0.0, 9) == std::vector<int>(300, -1));
  CHECK_THROWS_AS(disconnect_plan(requests, 1.5, 9), ParameterError);

  ClientRecord same{0, 0, 0, 200, ClientOutcome::completed, {}, "abc", "", -1, -1, ""};
  ClientRecord differs{1, 0, 0, 200, ClientOutcome::completed, {}, "abd", "", -1, -1, ""};
  ClientRecord cut{2, 0, 0, 200, ClientOutcome::disconnected, {}, "a", "", -1, -1, ""};
  const std::vector<std::string> m =
      text_mismatches(std::vector<ClientRecord>{same, differs, cut}, {{0, "abc"}, {1, "abc"}});
  REQUIRE(m.size() == 1);
  CHECK(m[0] == "request 1: texts part at byte 2 (3 vs 3 bytes)");
}
