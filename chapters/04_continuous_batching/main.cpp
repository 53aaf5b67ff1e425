// Chapter 04: continuous batching.
//
// Serves a workload (generated: Poisson arrivals, random lengths; or a JSONL workload file) with two
// scheduling policies on the same requests — static batching and continuous (iteration-level)
// batching with chunked prefill — and prints their latency and throughput side by side. The
// clock is the real model on this machine (--clock real) or the chapter 03 roofline for a chosen
// GPU and model (--clock sim). --sweep measures what batching buys on the real model: decode
// throughput against the number of sequences decoding together.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/serving/decode_sweep.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/app/trace.hpp"
#include "inferlab/serving/workload.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServingFlags serving;
  std::string policy = "both";
  double slo_ttft = 1.0;
  double slo_tpot = 0.05;
  std::string perfetto;
  std::string plot;
  bool sweep = false;
  int sweep_context = 64;
  int sweep_steps = 16;
  int reps = 3;
  std::string kv_dtype = "f32";
};

double ms(double s) { return s * 1e3; }

nlohmann::json latency_json(const RequestResult& r) {
  const RequestMetrics& m = r.metrics;
  return {{"arrival_s", r.request.arrival},
          {"admitted_s", r.admitted_at},
          {"slot", r.slot},
          {"ttft_s", m.ttft},
          {"tpot_s", m.tpot},
          {"e2e_s", m.e2e},
          {"itl_s", m.itl},
          {"output_tokens", m.output_tokens}};
}

nlohmann::json summary_json(const EngineRun& run, const ServingMetrics& m) {
  auto s = [](const Summary& x) {
    return nlohmann::json{{"mean", x.mean}, {"p50", x.p50}, {"p90", x.p90}, {"p99", x.p99}};
  };
  return {{"requests", m.requests},
          {"output_tokens", m.output_tokens},
          {"duration_s", m.duration},
          {"throughput_tokens_per_s", m.throughput_tokens},
          {"throughput_requests_per_s", m.throughput_requests},
          {"goodput_requests_per_s", m.goodput},
          {"slo_attainment", m.slo_attainment},
          {"ttft_s", s(m.ttft)},
          {"tpot_s", s(m.tpot)},
          {"itl_s", s(m.itl)},
          {"e2e_s", s(m.e2e)},
          {"steps", run.steps.size()},
          {"mean_occupancy", run.mean_occupancy},
          {"mean_slot_utilisation", run.mean_slot_utilisation}};
}

void print_table(const std::vector<const EngineRun*>& runs, const std::vector<ServingMetrics>& m,
                 const Slo& slo) {
  std::printf("%-34s", "");
  for (const EngineRun* r : runs) std::printf("  %22s", policy_name(r->scheduler.policy));
  std::printf("\n");
  auto row = [&](const char* label, auto&& cell) {
    std::printf("%-34s", label);
    for (std::size_t i = 0; i < runs.size(); ++i) std::printf("  %22s", cell(i).c_str());
    std::printf("\n");
  };
  row("requests / output tokens",
      [&](std::size_t i) { return fmt::format("{} / {}", m[i].requests, m[i].output_tokens); });
  row("duration (s)", [&](std::size_t i) { return fmt::format("{:.3f}", m[i].duration); });
  row("throughput (tokens/s)",
      [&](std::size_t i) { return fmt::format("{:.1f}", m[i].throughput_tokens); });
  row("throughput (requests/s)",
      [&](std::size_t i) { return fmt::format("{:.2f}", m[i].throughput_requests); });
  row("TTFT p50 / p90 / p99 (ms)", [&](std::size_t i) {
    return fmt::format("{:.1f} / {:.1f} / {:.1f}", ms(m[i].ttft.p50), ms(m[i].ttft.p90),
                       ms(m[i].ttft.p99));
  });
  row("TPOT p50 / p99 (ms)", [&](std::size_t i) {
    return fmt::format("{:.2f} / {:.2f}", ms(m[i].tpot.p50), ms(m[i].tpot.p99));
  });
  row("ITL p50 / p99 (ms)", [&](std::size_t i) {
    return fmt::format("{:.2f} / {:.2f}", ms(m[i].itl.p50), ms(m[i].itl.p99));
  });
  row("E2E p50 / p99 (s)",
      [&](std::size_t i) { return fmt::format("{:.3f} / {:.3f}", m[i].e2e.p50, m[i].e2e.p99); });
  const std::string goodput_label =
      fmt::format("goodput (req/s, TTFT<={:g}s TPOT<={:g}ms)", slo.ttft, ms(slo.tpot));
  std::printf("%s\n", goodput_label.c_str());
  row("  goodput / SLO attainment", [&](std::size_t i) {
    return fmt::format("{:.2f} / {:.0f}%", m[i].goodput, 100.0 * m[i].slo_attainment);
  });
  row("steps", [&](std::size_t i) { return fmt::format("{}", runs[i]->steps.size()); });
  row("slots busy (mean occupancy)",
      [&](std::size_t i) { return fmt::format("{:.0f}%", 100.0 * runs[i]->mean_occupancy); });
}

nlohmann::json sweep_json(const DecodeSweep& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const DecodeSweepRow& r : s.rows)
    rows.push_back({{"batch", r.batch},
                    {"step_s", r.step_seconds},
                    {"step_spread", r.step_spread},
                    {"tokens_per_s", r.tokens_per_second},
                    {"tokens_per_s_per_sequence", r.tokens_per_second_per_sequence}});
  return rows;
}

void print_sweep(const DecodeSweep& s) {
  std::printf(
      "\ndecode throughput vs concurrent sequences (real model, %d cached tokens each, "
      "mean of %d steps, median of %d runs):\n",
      s.context, s.steps, s.reps);
  std::printf("  %5s  %10s  %8s  %16s  %18s  %9s\n", "batch", "step (ms)", "spread",
              "tokens/s (all)", "tokens/s per seq", "vs B=1");
  for (const DecodeSweepRow& r : s.rows)
    std::printf("  %5d  %10.3f  %7.0f%%  %16.1f  %18.1f  %8.1fx\n", r.batch, ms(r.step_seconds),
                100.0 * r.step_spread, r.tokens_per_second, r.tokens_per_second_per_sequence,
                r.vs_batch1);
  print_timing_noise(s.reps, s.max_spread);
  std::printf("  16 sequences decode %.1fx as many tokens/s as one.\n", s.speedup_at_16);
  if (s.too_noisy()) {
    // A ridge from two noisy samples is not a property of the machine: say so instead.
    std::printf(
        "  The timings are too noisy (widest spread %.0f%%, %d runs) to locate this "
        "machine's ridge: rerun\n  with --threads 1 --reps 5 on an idle machine.\n",
        100.0 * s.max_spread, s.reps);
    return;
  }
  std::printf(
      "  Batch 1 streams the %.0f MB of weights at %.1f GB/s; batch 64 computes at %.1f "
      "GFLOP/s. Their\n  ratio, %.1f FLOP/byte, is this machine's ridge: in float32 "
      "decode turns compute-bound near\n  B = %.0f, and beyond it more sequences add "
      "latency, not throughput.\n",
      s.weight_bytes / 1e6, s.bandwidth / 1e9, s.flops / 1e9, s.ridge(), 2.0 * s.ridge());
  if (s.weight_bytes < 32e6)
    std::printf(
        "  (%.1f MB of weights fit in the CPU caches, so that bandwidth is the caches' and "
        "a step costs\n  per token: try --synthetic stories110M --sweep-context 8 for "
        "the memory-bound regime.)\n",
        s.weight_bytes / 1e6);
}

// The flags that only mean something in one mode: given in another, they are errors, not
// silently ignored (the serving flags' own rules are in check_serving_flags).
void check_mode_flags(const CLI::App& app, const Options& o) {
  check_serving_flags(app, o.serving);
  if (sim_clock(o.serving) && o.sweep)
    throw Error("--sweep measures the real model: it applies only to --clock real");
  if (!o.sweep) {
    for (const char* flag : {"--sweep-context", "--sweep-steps", "--reps"})
      if (app.count(flag)) throw Error(fmt::format("{} applies only with --sweep", flag));
  }
}

// Everything one run of the chapter served and measured.
struct Result {
  bool sim = false;                     // --clock sim
  std::string model;                    // the model's name, or the simulated configuration
  std::string sim_description;          // sim: the simulated model and machine
  Workload workload;                    // the requests every policy served
  std::vector<EngineRun> runs;          // one per policy
  std::vector<ServingMetrics> metrics;  // runs[i]'s, against the SLO
  bool same_tokens = true;              // each request's tokens equal under every policy
  std::optional<DecodeSweep> sweep;     // --sweep
};

nlohmann::json result_json(const Options& o, const Slo& slo, const Result& res) {
  const ServingFlags& sf = o.serving;
  nlohmann::json out = {{"chapter", "04_continuous_batching"},
                        {"model", res.model},
                        {"clock", sf.clock},
                        {"workload", res.workload.description},
                        {"max_seqs", sf.max_seqs},
                        {"max_batched_tokens", sf.max_batched_tokens},
                        {"slo", {{"ttft_s", slo.ttft}, {"tpot_s", slo.tpot}}},
                        {"same_tokens_across_policies", res.same_tokens}};
  if (res.sim) out["hardware"] = sf.hardware;
  nlohmann::json reqs = nlohmann::json::array();
  for (std::size_t i = 0; i < res.workload.requests.size(); ++i) {
    const RequestResult& r = res.runs[0].requests[i];
    nlohmann::json latencies;
    for (const EngineRun& run : res.runs)
      latencies[policy_name(run.scheduler.policy)] = latency_json(run.requests[i]);
    reqs.push_back({{"id", r.request.id},
                    {"prompt", r.request.prompt},
                    {"prompt_tokens", r.prompt_tokens},
                    {"tokens", r.tokens},
                    {"generated_tokens", r.generated()},
                    {"stop_reason", stop_reason_name(r.stop_reason)},
                    {"text", r.text},
                    {"latencies", latencies}});
  }
  out["requests"] = reqs;
  nlohmann::json summary;
  for (std::size_t i = 0; i < res.runs.size(); ++i)
    summary[policy_name(res.runs[i].scheduler.policy)] = summary_json(res.runs[i], res.metrics[i]);
  out["summary"] = summary;
  if (res.sweep) {
    out["sweep"] = sweep_json(*res.sweep);
    out["sweep_reps"] = res.sweep->reps;
  }
  return out;
}

void print_result(const Options& o, const Slo& slo, const Result& res) {
  std::vector<const EngineRun*> views;
  for (const EngineRun& r : res.runs) views.push_back(&r);
  print_table(views, res.metrics, slo);
  const std::vector<ServingMetrics>& m = res.metrics;
  if (res.runs.size() == 2) {
    std::printf(
        "\ncontinuous vs static on the same %zu requests: %.2fx the throughput, p99 TTFT "
        "%.1f ms vs %.1f ms, goodput %.2f vs %.2f req/s\n",
        res.workload.requests.size(), m[1].throughput_tokens / m[0].throughput_tokens,
        ms(m[1].ttft.p99), ms(m[0].ttft.p99), m[1].goodput, m[0].goodput);
  }
  if (!res.sim && res.runs.size() == 2)
    std::printf(
        "(one run on the real clock: its times can move by tens of percent from run to run "
        "on a busy\n machine, so trust only large differences; the steps and slot rows are "
        "exact counts and do not move)\n");
  if (!res.sim)
    std::printf("each request's tokens under every policy: %s\n",
                res.same_tokens ? "identical (batch-invariant forward, one RNG per request)"
                                : "DIFFERENT (batch invariance is broken!)");
  if (!o.perfetto.empty())
    std::printf("trace written to %s (open it in https://ui.perfetto.dev)\n", o.perfetto.c_str());
  if (!o.plot.empty()) std::printf("Gantt chart written to %s\n", o.plot.c_str());
  if (res.sweep) print_sweep(*res.sweep);
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  if (!f.dump_logits.empty()) throw Error("--dump-logits does not apply to this chapter");
  const ServingFlags& sf = o.serving;
  Result res;
  res.sim = sim_clock(sf);
  const bool sim = res.sim;
  std::vector<Policy> policies;
  if (o.policy == "both")
    policies = {Policy::static_batching, Policy::continuous};
  else
    policies = {parse_policy(o.policy)};
  const DType kv_type = parse_kv_dtype(o.kv_dtype);
  const Slo slo{o.slo_ttft, o.slo_tpot};
  if (!o.perfetto.empty()) require_writable_output(o.perfetto, "--perfetto");
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  f.sampling.validate();  // before reading a workload file, whose lines take these as defaults

  // --- the workload: one list of requests, served by every policy ---
  res.workload = make_workload(sf, f.sampling);
  const Workload& w = res.workload;
  // The simulated clock needs only a tokenizer: it runs without any model file.
  const LoadedModel m = sim ? load_model_or_tokenizer(f) : load_model(f);
  SimEngine sim_engine;
  if (sim) {
    sim_engine = make_sim_engine(sf, m);
    sim_engine.kv_type = kv_type;
  }
  res.model = sim ? sf.config : m.model->name();
  // Every length against the context, now, not when the engine reaches it.
  check_workload_lengths(w, sf, *m.tokenizer, sim ? sim_engine.config : m.model->config());
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
                  fmt::format("{:.2f}B params", sim_engine.config.n_params() / 1e9).c_str(),
                  sim_engine.hardware.description.c_str());
      std::printf("tokenizer: %s (only to count text prompts)\n\n", m.tokenizer_source.c_str());
    } else {
      print_run_header("InferLab chapter 04: continuous batching (real clock)", m, f);
    }
    std::printf("workload:  %s\n", w.description.c_str());
    std::printf("scheduler: max %d sequences, max %d batched tokens per step (chunked prefill)\n\n",
                sf.max_seqs, sf.max_batched_tokens);
  }

  for (Policy p : policies) {
    const SchedulerConfig config = scheduler_config(sf, p);
    if (!f.json) std::fprintf(stderr, "[serving with %s batching...]\n", policy_name(p));
    res.runs.push_back(
        sim ? run_sim(w.requests, config, sim_engine)
            : run_real(w.requests, config,
                       {&*m.model, &*m.tokenizer, kv_type, parse_device(f.device), {}}));
  }
  std::vector<const EngineRun*> views;
  for (const EngineRun& r : res.runs) {
    views.push_back(&r);
    res.metrics.push_back(run_serving_metrics(r, slo));
  }
  // The chapter's agreement check: each request's tokens do not depend on the policy (own RNG,
  // batch-invariant forward pass).
  res.same_tokens = same_tokens(res.runs);
  if (o.sweep) {  // real clock only (check_mode_flags)
    if (!f.json) std::fprintf(stderr, "[decode sweep...]\n");
    res.sweep = decode_throughput_sweep(*m.model, o.sweep_context, o.sweep_steps, o.reps,
                                        parse_device(f.device));
  }

  if (!o.perfetto.empty()) write_perfetto_trace(o.perfetto, views);
  if (!o.plot.empty())
    gantt_plot(views, fmt::format("Batch slots over time: {} ({} clock)",
                                  sim ? sf.config + " on " + sf.hardware
                                      : title_model_name(m.model->name()),
                                  sf.clock))
        .save(o.plot);
  if (f.json)
    std::cout << result_json(o, slo, res).dump(1) << '\n';
  else
    print_result(o, slo, res);
  return res.same_tokens || sim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 04: continuous batching (static vs iteration-level scheduling)"};
  Options o;
  add_generation_flags(app, o.gen);
  // Chapter 04 serves a workload: the single-prompt flags do not apply (and are not accepted).
  for (const char* flag : {"--prompt", "--steps"}) app.remove_option(app.get_option(flag));
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
                 "sweep: runs per batch size; the table shows the median and "
                 "the spread")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] {
    check_mode_flags(app, o);
    return run(o);
  });
}
