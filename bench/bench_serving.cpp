// bench_serving: the client side of chapter 10. Replays a chapter 04 workload (generated:
// Poisson arrivals, length distributions; or a JSONL workload file) against any
// OpenAI-compatible server (InferLab's ch10_serving, llama-server, vLLM, ...), streaming every
// request, and prints what `vllm bench serve` prints under the same names: TTFT, TPOT, ITL and
// E2EL percentiles, request and token throughput, goodput under --goodput.
// For fault tests it can hang up on a random fraction of the streams (--disconnect-fraction) and
// check the completed texts against an earlier run (--expect).
#include <cstdio>
#include <fstream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/bench_report.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/base/error.hpp"
#include "serving_replay.hpp"

using namespace inferlab;

namespace {

struct Options {
  ServingFlags workload;
  std::string base_url = "http://127.0.0.1:8080", endpoint = "completions", expect;
  ReplayOptions replay;
  std::vector<std::string> goodput;
  float temperature = 0.0f;
  double disconnect_fraction = 0.0;
  std::uint64_t fault_seed = 1;
  bool json = false, per_request = false;
};

// Request id -> text of the completed requests of an earlier `--json --per-request` output.
std::map<int, std::string> expected_texts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot open {}", path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("requests") || !j["requests"].is_array())
    throw Error(fmt::format("{}: not the JSON of bench_serving --json --per-request", path));
  std::map<int, std::string> texts;
  for (const nlohmann::json& r : j["requests"])
    if (r.value("outcome", "") == "completed") texts[r.at("id").get<int>()] = r.at("text");
  return texts;
}

int run(const CLI::App& app, Options& o) {
  check_serving_flags(app, o.workload);
  for (const char* flag : {"--tenants"})
    if (app.count(flag)) throw Error(fmt::format("{} does not apply to bench_serving", flag));
  set_base_url(o.base_url, o.replay);
  o.replay.endpoint = parse_api_endpoint(o.endpoint);
  const BenchSlo slo = parse_goodput(o.goodput);
  SamplingParams sampling;
  sampling.temperature = o.temperature;
  const Workload w = make_workload(o.workload, sampling);
  std::map<int, std::string> expected;
  if (!o.expect.empty()) expected = expected_texts(o.expect);
  o.replay.hang_up_after = disconnect_plan(w.requests, o.disconnect_fraction, o.fault_seed);
  for (const Request& r : w.requests)  // every body now, so a bad request fails before the run
    openai_request_body(r, o.replay.endpoint, o.replay.model);
  if (o.replay.model.empty()) o.replay.model = first_served_model(o.replay);
  if (!o.json) {
    std::printf("bench_serving: %s%s, model %s\n", o.base_url.c_str(),
                api_path(o.replay.endpoint), o.replay.model.c_str());
    std::printf("workload: %s\n", w.description.c_str());
    std::fflush(stdout);
  }
  const ReplayResult result = replay_workload(w.requests, o.replay);
  const BenchMetrics m = bench_metrics(result.records, result.duration, slo);
  const std::vector<std::string> mismatches =
      o.expect.empty() ? std::vector<std::string>{} : text_mismatches(result.records, expected);
  if (o.json) {
    nlohmann::json out = to_json(m);
    out.update({{"base_url", o.base_url},
                {"endpoint", api_path(o.replay.endpoint)},
                {"model_id", o.replay.model},
                {"workload", w.description},
                {"max_concurrency", o.replay.max_concurrency},
                {"disconnect_fraction", o.disconnect_fraction}});
    if (!o.expect.empty()) out["text_mismatches"] = mismatches;
    if (o.per_request) {
      out["requests"] = nlohmann::json::array();
      for (const ClientRecord& r : result.records) out["requests"].push_back(to_json(r));
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_bench_metrics(m, o.replay.max_concurrency, w.requests.empty() ? 0 : o.workload.rate);
    for (const ClientRecord& r : result.records)
      if (r.outcome == ClientOutcome::failed)
        std::printf("request %d failed: %s\n", r.id, r.error.c_str());
    if (!o.expect.empty())
      std::printf("texts against %s: %zu of %d completed requests differ\n", o.expect.c_str(),
                  mismatches.size(), m.completed);
    for (const std::string& line : mismatches) std::printf("  %s\n", line.c_str());
  }
  return mismatches.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "bench_serving: replays a workload against an OpenAI-compatible server with streaming and "
      "prints vllm bench serve's metrics"};
  Options o;
  add_serving_flags(app, o.workload);
  for (const char* flag : {"--clock", "--max-batched-tokens", "--max-seqs", "--max-tokens"})
    app.remove_option(app.get_option(flag));  // the server's settings, not the client's
  for (const char* flag : {"--hardware", "--config", "--tenants"})
    app.get_option(flag)->group("");  // refused with a clear message (run), not offered
  app.add_option("--base-url", o.base_url, "the server, http://HOST:PORT")->capture_default_str();
  app.add_option("--endpoint", o.endpoint,
                 "completions (/v1/completions: text or token-id prompts) or chat "
                 "(/v1/chat/completions: text prompts)")
      ->capture_default_str();
  app.add_option("--served-model-name", o.replay.model,
                 "the model field of every request (default: the first of GET /v1/models)");
  app.add_option("--api-key", o.replay.api_key, "sent as Authorization: Bearer KEY");
  app.add_option("--max-concurrency", o.replay.max_concurrency,
                 "requests in flight at most; later arrivals wait (0: no cap)")
      ->check(integer_in(0, 100000))
      ->capture_default_str();
  app.add_option("--goodput", o.goodput,
                 "SLO of goodput, as vllm bench serve takes it: ttft:MS tpot:MS e2el:MS");
  app.add_option("--temperature", o.temperature,
                 "every request's temperature (0: greedy, so runs and servers compare)")
      ->check(finite_in(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--timeout", o.replay.timeout_s, "a request's read timeout, seconds")
      ->check(finite_in(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--disconnect-fraction", o.disconnect_fraction,
                 "fault test: this fraction of the requests hang up at a random point")
      ->check(finite_in(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--fault-seed", o.fault_seed, "seed of who hangs up and when")
      ->check(unsigned_64())
      ->capture_default_str();
  app.add_option("--expect", o.expect,
                 "the --json --per-request output of an earlier run: every completed request's "
                 "text must equal its text there (exit code 1 otherwise)");
  app.add_flag("--json", o.json, "one JSON object (vLLM's result keys) instead of the table");
  app.add_flag("--per-request", o.per_request, "with --json: every request's outcome and text");
  return run_main(app, argc, argv, [&] { return run(app, o); });
}
