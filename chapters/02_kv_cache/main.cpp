// Chapter 02: the KV cache.
//
// Generates like chapter 01, but keeps every position's keys and values: the prompt goes through
// the model once (prefill), then each step forwards only the newest token (decode). Then it shows
// the lesson: a naive step re-processes the whole sequence and grows with it, a cached step
// forwards one token and stays nearly flat; both give the same logits, bit for bit. With
// --compare-kv it measures what storing the cache in f16 or int8 costs in accuracy, and with
// --kv-calc it sizes the cache of real models with the calculator (whose prediction for the
// loaded model is checked against the bytes the cache really allocates). The measurements are
// in analysis/loop_compare.hpp and analysis/kv_sizing.hpp; this file wires and prints them.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inferlab/analysis/kv_sizing.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/app/analysis_json.hpp"
#include "inferlab/app/analysis_print.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/runtime/generate.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  std::string kv_dtype = "f32";
  std::string plot;
  bool compare_kv = false;
  int reps = 3;
  std::string kv_calc;  // a named configuration to size
  std::int64_t kv_context = 4096;
};

// Everything the chapter measured, for print_result() and the JSON.
struct Result {
  GenerationResult generation;          // the cached loop's run
  DType kv_type = DType::f32;           // its KV storage
  std::vector<StepLatency> lesson;      // naive vs cached step at growing positions
  std::vector<KVQuality> quality;       // --compare-kv: each storage type against f32
  KVPredictionCheck prediction;         // the calculator against the cache's allocation
  std::optional<KVSizingTable> sizing;  // --kv-calc
};

nlohmann::json result_json(const LoadedModel& m, const Options& o, const Result& res) {
  const GenerationResult& r = res.generation;
  nlohmann::json out = generation_json("02_kv_cache", m, o.gen, r);
  out["kv_calculator_check"] = to_json(res.prediction);
  if (res.sizing) out["kv_calc"] = to_json(*res.sizing);
  out["kv_cache"] = {{"dtype", dtype_name(res.kv_type)},
                     {"bytes_per_token", r.kv_bytes_per_token},
                     {"bytes_in_use", r.kv_bytes_in_use}};
  out["naive_vs_cached"] = to_json(res.lesson);
  out["reps"] = o.reps;
  if (!res.quality.empty()) out["kv_quality"] = to_json(res.quality);
  return out;
}

void print_result(const Options& o, const Result& res) {
  const GenerationResult& r = res.generation;
  std::printf("\n\n--- measurements ---\n");
  print_generation_metrics(r);
  std::printf(
      "KV cache:         %zu positions x %zu bytes = %.1f KiB in use (%s); the "
      "calculator predicts %.0f bytes/token: %s\n",
      r.tokens.size() - 1, r.kv_bytes_per_token, r.kv_bytes_in_use / 1024.0,
      dtype_name(res.kv_type), res.prediction.predicted_bytes_per_token,
      res.prediction.equal() ? "equal" : "DIFFERENT");

  std::printf("\nnaive step vs cached step (median of %d; same tokens, same position):\n", o.reps);
  std::printf("  %8s  %12s  %12s  %9s  %s\n", "position", "naive ms", "cached ms", "speed-up",
              "same logits");
  bool all_identical = true;
  double spread = 0.0;
  for (const StepLatency& s : res.lesson) {
    std::printf("  %8d  %12.3f  %12.3f  %8.1fx  %s\n", s.position, s.naive_s * 1e3,
                s.cached_s * 1e3, s.naive_s / s.cached_s, s.identical ? "yes (bit for bit)" : "NO");
    all_identical = all_identical && s.identical;
    spread = std::max({spread, s.naive_spread, s.cached_spread});
  }
  print_timing_noise(o.reps, spread);
  std::printf(
      "  the naive step grows with the position (it re-forwards every token); the cached "
      "step forwards one\n  token and only its attention grows. %s\n",
      all_identical ? "Both loops compute the same logits."
                    : "WARNING: the logits differ (f16/int8 naive steps quantize too, "
                      "but over a different cache history)");
  if (!o.plot.empty()) std::printf("  plot written to %s\n", o.plot.c_str());

  if (!res.quality.empty()) print_kv_quality(res.quality);
  if (res.sizing) print_kv_sizing(*res.sizing);
  std::printf(
      "\nNext: chapter 03 asks why a decode step costs what it costs: bytes moved vs "
      "FLOPs done (the roofline).\n");
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  Result res;
  res.kv_type = parse_kv_dtype(o.kv_dtype);
  const DType kv_type = res.kv_type;
  if (!o.kv_calc.empty()) res.sizing = kv_sizing_table(o.kv_calc, o.kv_context);
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  const LoadedModel m = load_model(f);
  const ModelConfig& c = m.model->config();
  if (o.compare_kv) {
    // The comparison generates from its own prompts with the same --steps: check them now.
    const int allowed = f.steps == 0 ? c.seq_len : f.steps;
    for (const std::string& p : kv_quality_prompts()) {
      const std::size_t n = m.tokenizer->encode(p, /*bos=*/true).size();
      if (n > static_cast<std::size_t>(allowed))
        throw Error(
            fmt::format("--compare-kv: its built-in prompt '{}' is {} tokens (BOS "
                        "included) but --steps {} allows {}: raise --steps",
                        p, n, f.steps, allowed));
    }
  }
  res.prediction = check_kv_prediction(c, kv_type);
  if (!f.json) {
    print_run_header("InferLab chapter 02: the KV cache", m, f,
                     fmt::format("KV cache:  {}, {} bytes per token ({} layers x {} KV heads x {} "
                                 "head dim x 2 (K and V){})",
                                 dtype_name(kv_type), res.prediction.allocated_bytes_per_token,
                                 c.n_layers, c.n_kv_heads, c.head_size(),
                                 kv_type == DType::int8 ? " + per-head scales" : ""));
  }

  GenerateOptions g = generate_options(f);
  g.loop = LoopKind::cached;
  g.kv_type = kv_type;
  res.generation = generate(*m.model, *m.tokenizer, g, stdout_text_stream(f));
  const GenerationResult& r = res.generation;
  if (!f.dump_logits.empty()) write_logits_file(f.dump_logits, r);

  // The lesson: naive vs cached step, at growing positions of the sequence just generated.
  const std::vector<int> positions = doubling_positions(static_cast<int>(r.tokens.size()) - 2);
  if (!f.json)
    std::fprintf(stderr, "\n[measuring naive vs cached steps at %zu positions...]",
                 positions.size());
  res.lesson = compare_step_latency(*m.model, r.tokens, positions, kv_type, o.reps);
  if (!o.plot.empty())
    step_latency_plot(res.lesson, title_model_name(m.model->name())).save(o.plot);
  if (o.compare_kv)
    res.quality = compare_kv_types(*m.model, *m.tokenizer, f.steps, [&](DType t) {
      if (!f.json)
        std::fprintf(stderr, "\n[comparing %s against f32 over %zu prompts...]", dtype_name(t),
                     kv_quality_prompts().size());
    });

  if (f.json)
    std::cout << result_json(m, o, res).dump(1) << '\n';
  else
    print_result(o, res);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 02: the KV cache (prefill once, then one token per step)"};
  Options o;
  add_generation_flags(app, o.gen);
  app.add_option("--kv-dtype", o.kv_dtype, "KV cache storage: f32, f16 or int8")
      ->check(CLI::IsMember({"f32", "f16", "int8"}))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG of step time vs position, naive vs cached");
  app.add_flag("--compare-kv", o.compare_kv,
               "measure the accuracy cost of f16 and int8 KV storage against f32");
  app.add_option("--reps", o.reps, "repetitions per timed step (best kept)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  app.add_option("--kv-calc", o.kv_calc,
                 "also print the KV memory calculator for a named configuration (" +
                     fmt::format("{}", fmt::join(named_config_names(), ", ")) + ")")
      ->check(CLI::IsMember(named_config_names()));
  app.add_option("--kv-context", o.kv_context, "context length for --kv-calc")
      ->needs("--kv-calc")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
