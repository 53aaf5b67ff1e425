// Chapter 03: the roofline.
//
// For a model configuration and a machine, prints what the roofline model predicts: the
// arithmetic intensity of every linear layer against the number of tokens in the batch, the
// intensity of decode attention, the ridge point, the decode step time and tokens/s bound, the
// critical batch size, and the prefill time. With --hardware this it then measures this
// machine (bandwidth, FMA peak and Eigen's GEMM per thread count), times the core's real
// kernels (a linear layer at batch 1/8/64/512, decode attention over a long context) and, for a
// model small enough to build here, the whole model (prefill, decode at several batch sizes),
// places them on the measured roofline, and finds the critical batch empirically, beside the
// formula. The core computes all of it as one RooflineReport (analysis/roofline_report.hpp);
// this file parses the flags, prints the report or turns it into JSON, and draws the plot.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/analysis/roofline_report.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/model/model.hpp"

using namespace inferlab;
using json = nlohmann::json;

namespace {

struct Options {
  RooflineRequest request;
  std::string plot;
  int threads = 0;
  bool json = false;
};

void progress(const std::string& line) {
  std::fprintf(stderr, "[ch03] %s\n", line.c_str());
  std::fflush(stderr);
}

// JSON has no infinity: a critical batch that does not exist is null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string batch_text(double b) {
  return std::isfinite(b) ? fmt::format("{:.0f}", b) : std::string("none (never compute-bound)");
}

json to_json(const RooflineReport& report, const RooflineRequest& request) {
  const RooflinePrediction& p = report.prediction;
  const Hardware& hw = p.hardware;
  auto op_json = [](const OpCost& op) {
    return json{
        {"name", op.name}, {"flops", op.flops}, {"bytes", op.bytes}, {"intensity", op.intensity()}};
  };
  auto point_json = [&](const MeasuredPoint& m) {
    return json{{"name", m.name},
                {"flops", m.flops},
                {"bytes", m.bytes},
                {"seconds", m.seconds},
                {"intensity", m.intensity()},
                {"flops_per_second", m.flops_per_second()},
                {"bytes_per_second", m.bytes_per_second()},
                {"attainable_flops_per_second", attainable_flops(hw, m.intensity())}};
  };
  auto model_point_json = [&](const ModelPoint& m) {
    return json{{"name", m.name},
                {"tokens", m.tokens},
                {"flops", m.flops},
                {"bytes", m.bytes},
                {"seconds", m.seconds},
                {"tokens_per_second", m.tokens_per_second()},
                {"intensity", m.intensity()},
                {"flops_per_second", m.flops_per_second()},
                {"attainable_flops_per_second", attainable_flops(hw, m.intensity())}};
  };

  json linear = json::array();
  for (const LinearIntensityRow& row : p.linear) {
    json ops = json::array();
    for (const OpCost& op : row.ops) ops.push_back(op_json(op));
    linear.push_back({{"tokens", row.tokens}, {"ops", ops}});
  }
  json by_context = json::array();
  for (const ContextCriticalBatch& b : p.critical_by_context)
    by_context.push_back(
        {{"context", b.context}, {"critical_batch", finite_or_null(b.critical_batch)}});
  const std::optional<MemoryFit>& fit = p.memory_fit;
  json out = {
      {"chapter", "03_roofline"},
      {"config", report.config_name},
      {"hardware",
       {{"name", hw.name},
        {"description", hw.description},
        {"dtype", hw.dtype},
        {"peak_flops", hw.peak_flops},
        {"bandwidth_bytes_per_s", hw.bandwidth},
        {"memory_bytes", hw.memory_bytes},
        {"measured", hw.measured},
        {"source", hw.source}}},
      {"threads", report.threads},
      {"weight_dtype", dtype_name(p.cost.weight_dtype)},
      {"ridge_point", hw.ridge_point()},
      {"linear_intensity", linear},
      {"decode_attention",
       {{"context", p.attention_context},
        {"intensity", p.attention.intensity()},
        {"intensity_limit", p.attention_intensity_limit},
        {"gqa_group", p.config.kv_group()}}},
      {"memory_fit", fit ? json{{"fits", fit->fits},
                                {"needed_bytes", fit->needed_bytes},
                                {"weight_bytes", fit->weight_bytes},
                                {"kv_bytes", fit->kv_bytes},
                                {"device_bytes", fit->device_bytes},
                                {"message", memory_fit_message(*fit)}}
                         : json(nullptr)},
      {"decode_bound",
       {{"batch", request.batch},
        {"context", request.context},
        {"seconds_per_step", p.decode.seconds},
        {"tokens_per_second", p.decode.tokens_per_second},
        {"tokens_per_second_per_sequence", p.decode.tokens_per_second_per_sequence},
        {"memory_bound", p.decode.step.memory_bound()},
        {"weight_bytes", p.decode.step.weight_bytes},
        {"kv_bytes", p.decode.step.kv_bytes},
        {"flops", p.decode.step.flops}}},
      {"critical_batch",
       {{"formula", "B* = W / (F * BW / P - K); weights only: (bytes per weight / 2) * P / BW"},
        {"weights_only", finite_or_null(p.critical_textbook)},
        {"with_activations", finite_or_null(p.critical_with_activations)},
        {"by_context", by_context}}},
      {"prefill",
       {{"tokens", request.prompt_tokens},
        {"seconds_at_peak", p.prefill_seconds_at_peak},
        {"utilisation", request.utilisation},
        {"seconds", p.prefill_seconds}}},
      {"textbook",
       {{"decode_seconds_per_token", p.decode_textbook.seconds},
        {"tokens_per_second", p.decode_textbook.tokens_per_second},
        {"critical_batch", p.critical_textbook},
        {"prefill_seconds", p.prefill_seconds_textbook}}},
      {"measured", nullptr}};
  if (!report.measured) return out;

  const MachineRoofline& m = *report.measured;
  json rows = json::array(), linear_points = json::array(), attention_points = json::array(),
       sweep = json::array();
  for (const ThreadMeasurement& r : m.machine.per_threads)
    rows.push_back({{"threads", r.threads},
                    {"read_bytes_per_s", r.read_bandwidth},
                    {"gemm_flops", r.gemm_flops},
                    {"fma_flops", r.fma_flops}});
  for (const MeasuredPoint& point : m.linear) linear_points.push_back(point_json(point));
  for (const MeasuredPoint& point : m.attention) attention_points.push_back(point_json(point));
  for (const auto& r : m.sweep.rows)
    sweep.push_back(
        {{"batch", r.batch}, {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second}});
  out["measured"] = {{"per_threads", rows},
                     {"linear_shape", {m.d_out, m.n_in}},
                     {"linear", linear_points},
                     {"attention", attention_points},
                     {"critical_batch",
                      {{"sweep", sweep},
                       {"empirical_asymptotes", m.sweep.asymptote_batch},
                       {"empirical_knee", m.sweep.knee_batch},
                       {"formula", finite_or_null(m.formula_batch)},
                       {"kernel_peak_flops", m.kernel_peak_flops},
                       {"formula_kernel_roof", finite_or_null(m.kernel_formula_batch)}}},
                     {"model", nullptr}};
  if (m.model) {
    json model_points = json::array();
    model_points.push_back(model_point_json(m.model->prefill));
    for (const ModelPoint& point : m.model->batched)
      model_points.push_back(model_point_json(point));
    out["measured"]["model"] = model_points;
  } else {
    out["measured"]["model_note"] = m.model_note;
  }
  return out;
}

void print_report(const RooflineReport& report, const RooflineRequest& request,
                  const std::string& plot_path) {
  const RooflinePrediction& p = report.prediction;
  const ModelConfig& c = p.config;
  const Hardware& hw = p.hardware;
  std::printf("InferLab chapter 03: the roofline\n");
  std::printf(
      "model:     %s: dim %d, hidden %d, %d layers, %d heads / %d KV heads (g = %d), "
      "%.2fB params\n",
      report.config_name.c_str(), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
      c.kv_group(), c.n_params() / 1e9);
  std::printf("hardware:  %s (%s)\n", hw.name.c_str(), hw.description.c_str());
  std::printf(
      "           peak %.4g TFLOP/s dense %s, bandwidth %.4g GB/s -> ridge point I* = %.1f "
      "FLOP/byte\n",
      hw.peak_flops / 1e12, hw.dtype.c_str(), hw.bandwidth / 1e9, hw.ridge_point());
  std::printf("           source: %s\n", hw.source.c_str());
  const double bytes_w = dtype_bytes(p.cost.weight_dtype);
  std::printf("formats:   weights, activations and KV in %s (%g bytes per number)\n\n",
              dtype_name(p.cost.weight_dtype), bytes_w);

  if (report.measured) {
    std::printf("this machine, per thread count:\n  %7s  %14s  %16s  %16s\n", "threads",
                "read GB/s", "FMA GFLOP/s", "Eigen GFLOP/s");
    for (const ThreadMeasurement& r : report.measured->machine.per_threads)
      std::printf("  %7d  %14.2f  %16.2f  %16.2f\n", r.threads, r.read_bandwidth / 1e9,
                  r.fma_flops / 1e9, r.gemm_flops / 1e9);
    std::printf("\n");
  }

  std::printf("linear layers: arithmetic intensity (FLOP/byte) vs tokens in the batch\n  %8s",
              "tokens");
  for (const OpCost& op : p.linear.front().ops) std::printf("  %10s", op.name.c_str());
  std::printf("  %s\n", "bound");
  for (const LinearIntensityRow& row : p.linear) {
    std::printf("  %8d", row.tokens);
    for (const OpCost& op : row.ops) std::printf("  %10.1f", op.intensity());
    std::printf("  %s\n", row.memory_bound ? "memory" : "compute");
  }
  std::printf("  ~%g x tokens in the batch: the weights are read once and used by every token.\n\n",
              2.0 / bytes_w);

  std::printf(
      "decode attention over %lld cached tokens: %.2f FLOP/byte (limit 2g/bytes = %.2f; "
      "without GQA it would be %.2f)\n",
      static_cast<long long>(p.attention_context), p.attention.intensity(),
      p.attention_intensity_limit, p.attention_intensity_mha);
  std::printf("  at any batch size: each sequence reads its own KV cache, nothing is shared.\n\n");

  const DecodeBound& decode = p.decode;
  std::printf(
      "decode, batch %d, context %lld: %.3f ms per step -> %.1f tokens/s in all, %.1f "
      "tokens/s per sequence (%s-bound)\n",
      request.batch, static_cast<long long>(request.context), decode.seconds * 1e3,
      decode.tokens_per_second, decode.tokens_per_second_per_sequence,
      decode.step.memory_bound() ? "memory" : "compute");
  std::printf("  bytes per step: weights %s, KV %s; FLOPs %.3g (arithmetic would take %.3f ms)\n",
              format_bytes(decode.step.weight_bytes).c_str(),
              format_bytes(decode.step.kv_bytes).c_str(), decode.step.flops,
              decode.step.compute_seconds * 1e3);
  std::printf(
      "  the worked example's accounting (every parameter read, batch 1): %.3f ms, %.1f tokens/s\n",
      p.decode_textbook.seconds * 1e3, p.decode_textbook.tokens_per_second);
  if (p.memory_fit) {
    std::printf(
        "  memory on one %s: %s%s\n", hw.name.c_str(), memory_fit_message(*p.memory_fit).c_str(),
        p.memory_fit->fits ? ""
                           : ": the time above is for a device that does not exist (split the "
                             "model over several, or shrink the batch or context)");
  }
  std::printf("\n");

  std::printf("critical batch (decode turns compute-bound): B* = W / (F*BW/P - K)\n");
  std::printf("  weights only, B* = (bytes per weight / 2) x P / BW:   %.1f\n",
              p.critical_textbook);
  std::printf("  counting the activations each layer reads and writes: %.1f\n",
              p.critical_with_activations);
  for (const ContextCriticalBatch& b : p.critical_by_context)
    if (b.context > 0)
      std::printf("  with a KV cache of %6lld tokens per sequence:        %s\n",
                  static_cast<long long>(b.context), batch_text(b.critical_batch).c_str());
  std::printf("\n");

  std::printf(
      "prefill of %d tokens: %.2f ms at peak, %.2f ms at %.0f %% utilisation "
      "(worked-example accounting: %.2f ms at peak)\n",
      request.prompt_tokens, p.prefill_seconds_at_peak * 1e3, p.prefill_seconds * 1e3,
      request.utilisation * 100, p.prefill_seconds_textbook * 1e3);
  std::printf("  = %.1f batch-1 decode steps of time, for one output token\n",
              p.prefill_in_decode_steps);

  if (report.measured) {
    const MachineRoofline& m = *report.measured;
    std::printf(
        "\nmeasured on this machine: the core's kernels (float32), median of the repetitions\n");
    std::printf("  %-26s  %10s  %10s  %11s  %11s  %12s\n", "kernel", "FLOP/byte", "ms", "GB/s",
                "GFLOP/s", "roof GFLOP/s");
    auto row = [&](const MeasuredPoint& k) {
      std::printf("  %-26s  %10.2f  %10.3f  %11.2f  %11.2f  %12.2f\n", k.name.c_str(),
                  k.intensity(), k.seconds * 1e3, k.bytes_per_second() / 1e9,
                  k.flops_per_second() / 1e9, attainable_flops(hw, k.intensity()) / 1e9);
    };
    for (const MeasuredPoint& k : m.linear) row(k);
    for (const MeasuredPoint& k : m.attention) row(k);
    // Say which points are impossible, instead of drawing an impossible plot without a word.
    for (const AboveRoof& a : report.above_roof)
      std::printf(
          "  note: %s runs %.0f%% above its roof: the roofs were measured low (a busy "
          "machine) or its data stayed in a cache; rerun on a quiet machine with "
          "--threads 1\n",
          a.name.c_str(), a.percent);
    std::printf("\n  batch sweep of the %d x %d layer (matmul_packed):\n  %6s  %10s  %12s  %14s\n",
                m.d_out, m.n_in, "batch", "step ms", "tokens/s", "gain vs prev");
    for (std::size_t i = 0; i < m.sweep.rows.size(); ++i) {
      const auto& r = m.sweep.rows[i];
      std::printf("  %6d  %10.3f  %12.1f", r.batch, r.seconds * 1e3, r.tokens_per_second);
      if (i > 0)
        std::printf("  %13.2fx", r.tokens_per_second / m.sweep.rows[i - 1].tokens_per_second);
      std::printf("\n");
    }
    std::printf(
        "  critical batch, empirical: %.1f (where the flat and the linear asymptotes of the "
        "step time meet); tokens/s stops doubling with the batch at %s\n",
        m.sweep.asymptote_batch,
        m.sweep.knee_batch > 0 ? fmt::format("batch {}", m.sweep.knee_batch).c_str()
                               : "no batch in the sweep");
    std::printf(
        "  critical batch, formula B* = n d 4 / (2 n d BW/P - (n+d) 4) on the measured roofs "
        "(P = FMA peak %.1f GFLOP/s): %s\n",
        hw.peak_flops / 1e9, batch_text(m.formula_batch).c_str());
    std::printf(
        "  the same formula with matmul_packed's own best, P = %.1f GFLOP/s (%.0f %% of the peak): "
        "%s  <- compare with the empirical value\n",
        m.kernel_peak_flops / 1e9, 100.0 * m.kernel_peak_flops / hw.peak_flops,
        batch_text(m.kernel_formula_batch).c_str());
    if (m.model) {
      const ModelPoint& d1 = m.model->batched.front();
      std::printf("\n  the whole model (%s, random weights), median of the repetitions:\n",
                  report.config_name.c_str());
      std::printf("  %-16s  %10s  %12s  %10s  %11s  %12s  %8s\n", "workload", "FLOP/byte",
                  "tokens/s", "GB/s", "GFLOP/s", "roof GFLOP/s", "vs B=1");
      auto model_row = [&](const ModelPoint& w) {
        std::printf("  %-16s  %10.2f  %12.1f  %10.2f  %11.2f  %12.2f  %7.2fx\n", w.name.c_str(),
                    w.intensity(), w.tokens_per_second(), w.bytes_per_second() / 1e9,
                    w.flops_per_second() / 1e9, attainable_flops(hw, w.intensity()) / 1e9,
                    w.tokens_per_second() / d1.tokens_per_second());
      };
      model_row(m.model->prefill);
      for (const ModelPoint& w : m.model->batched) model_row(w);
    } else {
      std::printf("\n  the whole model: %s\n", m.model_note.c_str());
    }
  } else {
    std::printf(
        "\n(no measurements: they run with --hardware this, on this machine's own roofline)\n");
  }
  if (!plot_path.empty()) std::printf("\nroofline plot written to %s\n", plot_path.c_str());
  std::printf("\nNext: chapter 04 batches many sequences into each step to climb the roofline.\n");
}

int run(Options& o) {
  // The validators bound the numbers; what is left is the flags that only mean something for
  // --hardware this, and the plot's path, all before any measurement.
  const bool measuring = o.request.hardware == "this";
  if (!measuring && o.request.quick) throw Error("--quick applies only to --hardware this");
  if (!measuring && o.threads > 0) throw Error("--threads applies only to --hardware this");
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  if (o.threads > 0) omp_set_num_threads(o.threads);
  o.request.progress = progress;

  const RooflineReport report = roofline_report(o.request);
  if (!o.plot.empty()) {
    const Hardware& hw = report.prediction.hardware;
    roofline_plot(hw, report.plot_points,
                  fmt::format("Roofline of {} ({}), {}", hw.name, hw.dtype, report.config_name))
        .save(o.plot);
  }
  if (o.json)
    std::cout << to_json(report, o.request).dump(1) << '\n';
  else
    print_report(report, o.request, o.plot);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 03: the roofline (what bounds decode and prefill, predicted and "
      "measured)"};
  Options o;
  RooflineRequest& r = o.request;
  app.add_option("--config", r.config,
                 "model shape: " + fmt::format("{}", fmt::join(named_config_names(), ", ")))
      ->capture_default_str();
  app.add_option("--hardware", r.hardware,
                 "machine: " + fmt::format("{}", fmt::join(hardware_names(), ", ")) +
                     " ('this' measures the machine you run on)")
      ->capture_default_str();
  app.add_option("--batch", r.batch, "sequences decoding together")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--prompt-tokens", r.prompt_tokens, "prompt length for the prefill estimate")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option(
         "--context", r.context,
         "tokens already in each sequence's KV cache for the decode bound (0 = weights only, "
         "as in the worked example)")
      ->check(integer_in(0, std::int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--utilisation", r.utilisation, "share of peak FLOP/s a prefill reaches, (0, 1]")
      ->check(finite_in(1e-3, 1.0))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG roofline to this file");
  app.add_option("--threads", o.threads,
                 "CPU threads (0 = OpenMP default); 'this' is measured "
                 "at 1, 2, 4, ... up to this many")
      ->check(thread_count());
  app.add_flag("--quick", r.quick, "smaller measurements (tests, CI)");
  app.add_flag("--json", o.json, "print one JSON object");
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
