// Chapter 02: the KV cache.
//
// Generates like chapter 01, but keeps every position's keys and values: the prompt goes through
// the model once (prefill), then each step forwards only the newest token (decode). Then it shows
// the lesson: a naive step re-processes the whole sequence and grows with it, a cached step
// forwards one token and stays nearly flat; both give the same logits, bit for bit. With
// --compare-kv it measures what storing the cache in f16 or int8 costs in accuracy, and with
// --kv-calc it sizes the cache of real models with the calculator (whose prediction for the
// loaded model is checked against the bytes the cache really allocates).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/analysis/kv_sizing.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/app/svg.hpp"

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

// The golden prompts of the reference outputs: a fixed, varied set for the quality comparison.
const std::vector<std::string> kQualityPrompts = {"Once upon a time",
                                                  "",
                                                  "Lily and Tom went to the",
                                                  "The cat sat on the",
                                                  "One day, a little boy named Tim found a",
                                                  "Hi"};

// Positions 8, 16, 32, ... up to the last forwarded one.
std::vector<int> lesson_positions(int last) {
  std::vector<int> p;
  for (int x = 8; x < last; x *= 2) p.push_back(x);
  p.push_back(last);
  return p;
}

void write_plot(const std::string& path, const std::vector<StepLatency>& steps,
                const std::string& model) {
  SvgPlot plot("Step latency: naive loop vs KV cache (" + model + ")");
  plot.set_x_axis("position (tokens already in the sequence)", AxisScale::linear);
  plot.set_y_axis("step time (ms)", AxisScale::log);
  std::vector<double> x, naive, cached;
  for (const StepLatency& s : steps) {
    x.push_back(s.position);
    naive.push_back(s.naive_s * 1e3);
    cached.push_back(s.cached_s * 1e3);
  }
  plot.add_line("naive: re-forward the whole sequence", x, naive);
  plot.add_line("KV cache: forward one token", x, cached);
  plot.set_legend(LegendPosition::top_left);
  plot.save(path);
}

// Everything the chapter measured, for print_result() and result_json().
struct Result {
  GenerationResult generation;          // the cached loop's run
  DType kv_type = DType::f32;           // its KV storage
  std::vector<StepLatency> lesson;      // naive vs cached step at growing positions
  std::vector<KVQuality> quality;       // --compare-kv: each storage type against f32
  KVPredictionCheck prediction;         // the calculator against the cache's allocation
  std::optional<KVSizingTable> sizing;  // --kv-calc
};

nlohmann::json sizing_json(const KVSizingTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const KVSizingRow& r : t.rows)
    rows.push_back({{"dtype", dtype_name(r.dtype)},
                    {"bytes_per_token", r.bytes_per_token},
                    {"bytes_per_sequence", r.bytes_per_sequence},
                    {"one_gpu_80GB",
                     {{"fits", r.one_gpu.fits},
                      {"needed_bytes", r.one_gpu.needed_bytes},
                      {"message", memory_fit_message(r.one_gpu)}}},
                    {"gpus_80GB", r.gpus},
                    {"max_sequences", r.max_sequences}});
  return {{"config", t.name}, {"context_tokens", t.context_tokens}, {"rows", rows}};
}

// Bytes per token for every type, the total at the chosen context, and the concurrency on the
// fewest 80 GB GPUs that hold the bf16 weights.
void print_sizing(const KVSizingTable& t) {
  const ModelConfig& c = t.config;
  std::printf(
      "\nKV cache calculator: %s (%d layers x %d KV heads x head dim %d x 2 for K and V), "
      "%lld tokens of context\n",
      t.name.c_str(), c.n_layers, c.n_kv_heads, c.head_size(),
      static_cast<long long>(t.context_tokens));
  std::printf("  %5s  %14s  %26s  %s\n", "type", "bytes/token", "per sequence",
              "sequences that fit");
  std::string one_gpu_note;  // set when bf16 weights + one bf16 sequence exceed one 80 GB GPU
  for (const KVSizingRow& r : t.rows) {
    std::printf("  %5s  %14.0f  %26s  %lld on %dx 80 GB\n", dtype_name(r.dtype), r.bytes_per_token,
                format_bytes(r.bytes_per_sequence).c_str(), static_cast<long long>(r.max_sequences),
                r.gpus);
    if (r.dtype == DType::bf16 && !r.one_gpu.fits) one_gpu_note = memory_fit_message(r.one_gpu);
  }
  std::printf("  (GiB = 2^30 bytes, GB = 10^9 bytes; weights in bf16, no memory reserved)\n");
  if (!one_gpu_note.empty())
    std::printf("  %s on one 80 GB GPU, with one bf16 sequence: %s\n", t.name.c_str(),
                one_gpu_note.c_str());
}

nlohmann::json result_json(const LoadedModel& m, const Options& o, const Result& res) {
  const GenerationResult& r = res.generation;
  const KVPredictionCheck& p = res.prediction;
  nlohmann::json out = generation_json("02_kv_cache", m, o.gen, r);
  out["kv_calculator_check"] = {{"dtype", dtype_name(p.type)},
                                {"predicted_bytes_per_token", p.predicted_bytes_per_token},
                                {"allocated_bytes_per_token", p.allocated_bytes_per_token},
                                {"equal", p.equal()}};
  if (res.sizing) out["kv_calc"] = sizing_json(*res.sizing);
  out["kv_cache"] = {{"dtype", dtype_name(res.kv_type)},
                     {"bytes_per_token", r.kv_bytes_per_token},
                     {"bytes_in_use", r.kv_bytes_in_use}};
  nlohmann::json rows = nlohmann::json::array();
  for (const StepLatency& s : res.lesson)
    rows.push_back({{"position", s.position},
                    {"naive_s", s.naive_s},
                    {"cached_s", s.cached_s},
                    {"naive_spread", s.naive_spread},
                    {"cached_spread", s.cached_spread},
                    {"identical_logits", s.identical}});
  out["naive_vs_cached"] = rows;
  out["reps"] = o.reps;
  if (!res.quality.empty()) {
    nlohmann::json q = nlohmann::json::array();
    for (const KVQuality& k : res.quality)
      q.push_back({{"dtype", dtype_name(k.type)},
                   {"bytes_per_token", k.bytes_per_token},
                   {"max_abs_logit_diff", k.max_abs_logit_diff},
                   {"mean_abs_logit_diff", k.mean_abs_logit_diff},
                   {"positions", k.positions},
                   {"argmax_changed", k.argmax_changed},
                   {"sequences", k.sequences},
                   {"sequences_changed", k.sequences_changed},
                   {"tokens_changed", k.tokens_changed}});
    out["kv_quality"] = q;
  }
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

  if (!res.quality.empty()) {
    std::printf(
        "\nKV storage type vs f32 over %zu prompts (teacher-forced logits; free-running "
        "greedy tokens):\n",
        kQualityPrompts.size());
    std::printf("  %5s  %11s  %13s  %14s  %16s  %15s\n", "type", "bytes/token", "max |dlogit|",
                "mean |dlogit|", "argmax changed", "tokens changed");
    for (const KVQuality& k : res.quality)
      std::printf("  %5s  %11zu  %13.5f  %14.6f  %9d / %-5d  %8d in %d/%d\n", dtype_name(k.type),
                  k.bytes_per_token, k.max_abs_logit_diff, k.mean_abs_logit_diff, k.argmax_changed,
                  k.positions, k.tokens_changed, k.sequences_changed, k.sequences);
  }
  if (res.sizing) print_sizing(*res.sizing);
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
    for (const std::string& p : kQualityPrompts) {
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

  // --- generate with the cache ---
  GenerateOptions g = generate_options(f);
  g.loop = LoopKind::cached;
  g.kv_type = kv_type;
  res.generation = generate(*m.model, *m.tokenizer, g, [&](std::string_view piece) {
    if (!f.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  });
  const GenerationResult& r = res.generation;
  if (!f.dump_logits.empty()) write_logits_file(f.dump_logits, r);

  // --- the lesson: naive vs cached step, at growing positions of the sequence just generated ---
  const int last = static_cast<int>(r.tokens.size()) - 2;  // last forwarded position
  if (!f.json)
    std::fprintf(stderr, "\n[measuring naive vs cached steps at %zu positions...]",
                 lesson_positions(last).size());
  res.lesson = compare_step_latency(*m.model, r.tokens, lesson_positions(last), kv_type, o.reps);
  if (!o.plot.empty()) write_plot(o.plot, res.lesson, title_model_name(m.model->name()));

  if (o.compare_kv) {
    for (DType t : {DType::f32, DType::f16, DType::int8}) {
      if (!f.json)
        std::fprintf(stderr, "\n[comparing %s against f32 over %zu prompts...]", dtype_name(t),
                     kQualityPrompts.size());
      res.quality.push_back(compare_kv_type(*m.model, *m.tokenizer, kQualityPrompts, f.steps, t));
    }
  }

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
