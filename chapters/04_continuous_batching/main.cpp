// Chapter 04: continuous batching.
//
// Serves a workload (generated: Poisson arrivals, random lengths; or a JSONL workload file) with
// two scheduling policies on the same requests — static batching and continuous
// (iteration-level) batching with chunked prefill — and prints their latency and throughput side
// by side. The clock is the real model on this machine (--clock real) or the chapter 03 roofline
// for a chosen GPU and model (--clock sim). --sweep measures what batching buys on the real
// model: decode throughput against the number of sequences decoding together.
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/app/serving_json.hpp"
#include "inferlab/app/serving_report.hpp"
#include "inferlab/app/trace.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/serving/decode_sweep.hpp"
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/serving/workload.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServingFlags serving;
  std::string policy = "both", perfetto, plot, kv_dtype = "f32";
  double slo_ttft = 1.0, slo_tpot = 0.05;
  bool sweep = false;
  int sweep_context = 64, sweep_steps = 16, reps = 3;
};

// The flags that only mean something in one mode: given in another, they are errors, not
// silently ignored (the serving flags' own rules are in check_serving_flags).
void check_mode_flags(const CLI::App& app, const Options& o) {
  check_serving_flags(app, o.serving);
  std::vector<FlagScope> scopes = {
      {"--sweep", !sim_clock(o.serving), "to --clock real", "", "measures the real model"}};
  for (const char* flag : {"--sweep-context", "--sweep-steps", "--reps"})
    scopes.push_back({flag, o.sweep, "with --sweep", ""});
  scopes.push_back({"--dump-logits", false, "", "this chapter"});
  refuse_inapplicable_flags(app, scopes);
}

void print_result(const Options& o, const Slo& slo, const PolicyComparison& c, bool sim,
                  std::size_t requests) {
  print_policy_table(c, slo);
  const std::vector<ServingMetrics>& m = c.metrics;
  if (c.runs.size() == 2)
    std::printf(
        "\ncontinuous vs static on the same %zu requests: %.2fx the throughput, p99 TTFT "
        "%.1f ms vs %.1f ms, goodput %.2f vs %.2f req/s\n",
        requests, m[1].throughput_tokens / m[0].throughput_tokens, m[1].ttft.p99 * 1e3,
        m[0].ttft.p99 * 1e3, m[1].goodput, m[0].goodput);
  if (!sim && c.runs.size() == 2)
    std::printf(
        "(one run on the real clock: its times can move by tens of percent from run to run "
        "on a busy\n machine, so trust only large differences; the steps and slot rows are "
        "exact counts and do not move)\n");
  if (!sim)
    std::printf("each request's tokens under every policy: %s\n",
                c.same_tokens ? "identical (batch-invariant forward, one RNG per request)"
                              : "DIFFERENT (batch invariance is broken!)");
  if (!o.perfetto.empty())
    std::printf("trace written to %s (open it in https://ui.perfetto.dev)\n", o.perfetto.c_str());
  if (!o.plot.empty()) std::printf("Gantt chart written to %s\n", o.plot.c_str());
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  const ServingFlags& sf = o.serving;
  const bool sim = sim_clock(sf);
  std::vector<Policy> policies = {Policy::static_batching, Policy::continuous};
  if (o.policy != "both") policies = {parse_policy(o.policy)};
  const Slo slo{o.slo_ttft, o.slo_tpot};
  if (!o.perfetto.empty()) require_writable_output(o.perfetto, "--perfetto");
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  f.sampling.validate();  // before reading a workload file, whose lines take these as defaults

  const Workload w = make_workload(sf, f.sampling);  // served by every policy
  // The simulated clock needs only a tokenizer: it runs without any model file.
  const ServedModel served(sf, f, parse_kv_dtype(o.kv_dtype));
  const LoadedModel& m = served.loaded;
  const ServingEngine& engine = served.engine;
  // Every length against the context, now, not when the engine reaches it.
  check_workload_lengths(w, sf, *m.tokenizer, served.config());
  if (o.sweep && std::int64_t{o.sweep_context} + o.sweep_steps + 1 > m.model->config().seq_len)
    throw Error(
        fmt::format("--sweep-context {} + --sweep-steps {} does not fit the model's "
                    "context of {} positions",
                    o.sweep_context, o.sweep_steps, m.model->config().seq_len));
  if (!f.json) {
    if (sim) {
      std::printf("InferLab chapter 04: continuous batching (simulated)\n");
      std::printf("clock:     sim: step time = roofline bound of %s (%s) on %s\n",
                  sf.config.c_str(),
                  fmt::format("{:.2f}B params", engine.sim->config.n_params() / 1e9).c_str(),
                  engine.sim->hardware.description.c_str());
      std::printf("tokenizer: %s (only to count text prompts)\n\n", m.tokenizer_source.c_str());
    } else {
      print_run_header("InferLab chapter 04: continuous batching (real clock)", m, f);
    }
    std::printf("workload:  %s\n", w.description.c_str());
    std::printf("scheduler: max %d sequences, max %d batched tokens per step (chunked prefill)\n\n",
                sf.max_seqs, sf.max_batched_tokens);
  }

  std::vector<SchedulerConfig> configs;
  for (Policy p : policies) configs.push_back(scheduler_config(sf, p));
  const PolicyComparison c = compare_policies(w.requests, configs, engine, slo, [&](auto& config) {
    if (!f.json)
      std::fprintf(stderr, "[serving with %s batching...]\n", policy_name(config.policy));
  });
  std::optional<DecodeSweep> sweep;
  if (o.sweep) {  // real clock only (check_mode_flags)
    if (!f.json) std::fprintf(stderr, "[decode sweep...]\n");
    sweep = decode_throughput_sweep(*m.model, o.sweep_context, o.sweep_steps, o.reps,
                                    parse_device(f.device));
  }

  std::vector<const EngineRun*> views;
  for (const EngineRun& r : c.runs) views.push_back(&r);
  if (!o.perfetto.empty()) write_perfetto_trace(o.perfetto, views);
  if (!o.plot.empty())
    gantt_plot(views, fmt::format("Batch slots over time: {} ({} clock)",
                                  sim ? sf.config + " on " + sf.hardware
                                      : title_model_name(m.model->name()),
                                  sf.clock))
        .save(o.plot);
  if (f.json) {
    nlohmann::json out = to_json(c);
    out.update({{"chapter", "04_continuous_batching"},
                {"model", served.name(sf)},
                {"clock", sf.clock},
                {"workload", w.description},
                {"max_seqs", sf.max_seqs},
                {"max_batched_tokens", sf.max_batched_tokens},
                {"slo", {{"ttft_s", slo.ttft}, {"tpot_s", slo.tpot}}}});
    if (sim) out["hardware"] = sf.hardware;
    if (sweep) out.update({{"sweep", to_json(*sweep)}, {"sweep_reps", sweep->reps}});
    std::cout << out.dump(1) << '\n';
  } else {
    print_result(o, slo, c, sim, w.requests.size());
    if (sweep) print_decode_sweep(*sweep);
  }
  return c.same_tokens || sim ? 0 : 1;
}

}  // namespace
int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 04: continuous batching (static vs iteration-level scheduling)"};
  Options o;
  add_generation_flags(app, o.gen);
  // Chapter 04 serves a workload: the single-prompt flags do not apply (and are not accepted).
  remove_prompt_flags(app);
  o.gen.steps = 0;  // each request may use the whole context
  app.add_option("--policy", o.policy, "static, continuous or both (side by side)")
      ->check(CLI::IsMember({"static", "continuous", "both"}))
      ->capture_default_str();
  add_serving_flags(app, o.serving);
  app.add_option("--slo-ttft", o.slo_ttft, "SLO on time to first token, seconds (goodput)")
      ->check(finite_in(0.0, kMaxArrivalSeconds, /*lo_open=*/true))
      ->capture_default_str();
  app.add_option("--slo-tpot", o.slo_tpot, "SLO on time per output token, seconds (goodput)")
      ->check(finite_in(0.0, kMaxArrivalSeconds, /*lo_open=*/true))
      ->capture_default_str();
  app.add_option("--kv-dtype", o.kv_dtype, "KV storage type: f32, f16 or int8")
      ->check(CLI::IsMember({"f32", "f16", "int8"}))
      ->capture_default_str();
  app.add_option("--perfetto", o.perfetto, "write a Chrome/Perfetto trace-event JSON here");
  app.add_option("--plot", o.plot, "write an SVG Gantt chart of the slots here");
  app.add_flag("--sweep", o.sweep,
               "real model: decode throughput at 1, 2, 4, ..., 64 concurrent sequences");
  app.add_option("--sweep-context", o.sweep_context, "sweep: cached tokens per sequence")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--sweep-steps", o.sweep_steps, "sweep: decode steps timed per batch")
      ->check(integer_in(1, 10000))
      ->capture_default_str();
  app.add_option("--reps", o.reps,
                 "sweep: runs per batch size; the table shows the median and the spread")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] {
    check_mode_flags(app, o);
    return run(o);
  });
}
