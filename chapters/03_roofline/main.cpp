// Chapter 03: the roofline.
//
// For a model configuration and a machine, prints what the roofline model predicts: the
// arithmetic intensity of the linear layers against the tokens in the batch and of decode
// attention, the ridge point, the decode bound, the critical batch size and the prefill time.
// With --hardware this the core also measures this machine, times its own kernels and (for a
// small model) the whole model on the measured roofline, and finds the critical batch
// empirically. The core computes all of it as one RooflineReport (analysis/roofline_report.hpp);
// this file parses the flags, prints the lesson, and writes the JSON and the plot.
#include <omp.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/roofline_report.hpp"
#include "inferlab/app/analysis_json.hpp"
#include "inferlab/app/analysis_print.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/base/units.hpp"

using namespace inferlab;

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

void print_report(const RooflineReport& report, const std::string& plot_path) {
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

  if (report.measured) print_thread_roofs(*report.measured);

  print_linear_intensity(p);

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
      p.batch, static_cast<long long>(p.context), decode.seconds * 1e3, decode.tokens_per_second,
      decode.tokens_per_second_per_sequence, decode.step.memory_bound() ? "memory" : "compute");
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
                  static_cast<long long>(b.context), critical_batch_text(b.critical_batch).c_str());
  std::printf("\n");

  std::printf(
      "prefill of %d tokens: %.2f ms at peak, %.2f ms at %.0f %% utilisation "
      "(worked-example accounting: %.2f ms at peak)\n",
      p.prompt_tokens, p.prefill_seconds_at_peak * 1e3, p.prefill_seconds * 1e3,
      p.utilisation * 100, p.prefill_seconds_textbook * 1e3);
  std::printf("  = %.1f batch-1 decode steps of time, for one output token\n",
              p.prefill_in_decode_steps);

  if (report.measured)
    print_measured_roofline(report);
  else
    std::printf(
        "\n(no measurements: they run with --hardware this, on this machine's own roofline)\n");
  if (!plot_path.empty()) std::printf("\nroofline plot written to %s\n", plot_path.c_str());
  std::printf("\nNext: chapter 04 batches many sequences into each step to climb the roofline.\n");
}

// The validators bound the numbers; what is left is the flags that only mean something for
// --hardware this (refuse_inapplicable_flags), before any measurement.
void check_mode_flags(const CLI::App& app, const Options& o) {
  const bool measuring = o.request.hardware == "this";
  refuse_inapplicable_flags(app, {{"--quick", measuring, "to --hardware this", ""},
                                  {"--threads", measuring, "to --hardware this", ""}});
}

int run(Options& o) {
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
  if (o.json) {
    nlohmann::json out = to_json(report);
    out["chapter"] = "03_roofline";
    std::cout << out.dump(1) << '\n';
  } else {
    print_report(report, o.plot);
  }
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
  return run_chapter(app, argc, argv, [&] {
    check_mode_flags(app, o);
    return run(o);
  });
}
