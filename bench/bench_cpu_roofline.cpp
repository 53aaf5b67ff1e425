// Benchmark: this CPU's two roofs and the whole model against them, in one run.
//   roofs:   read bandwidth (STREAM-style probe) and FMA peak (register-only multiply-adds);
//   decode:  batch-1 tokens/s and its share of the bandwidth roof (weights + KV bytes / time);
//   prefill: a prompt's tokens/s and its share of the FMA roof;
//   batched: decode of 1..64 sequences stepping together, tokens/s and the ratio to batch 1;
//   then the load time (file to packed weights) and the resident memory after the runs.
// Every time is the median of repetitions. Not a test: nothing is asserted.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inferlab/app/cli_checks.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/analysis/fma_peak.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/membw.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/weight_format.hpp"
#include "inferlab/analysis/model_points.hpp"
#include "inferlab/base/timer.hpp"

using namespace inferlab;

namespace {
// This process's resident memory (VmRSS of /proc/self/status), in bytes; 0 if unknown.
double resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  double kb = 0.0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> kb;
      break;
    }
  }
  return kb * 1024.0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "This CPU's roofs (bandwidth, FMA peak) and the model's decode, prefill and "
      "batched decode against them"};
  int threads = 0;
  std::string model_path, synthetic = "stories110M";
  ModelPointOptions o;
  o.reps = 5;
  app.add_option("--threads", threads, "CPU threads (0 = OpenMP default)");
  app.add_option("--model", model_path, "a GGUF or llama2.c .bin model (default: --synthetic)");
  app.add_option("--synthetic", synthetic, "random weights of this named shape")
      ->capture_default_str();
  app.add_option("--prompt-tokens", o.prompt_tokens, "prefill length")->capture_default_str();
  app.add_option("--batches", o.batches, "decode batch sizes, ascending from 1")
      ->capture_default_str();
  app.add_option("--steps", o.decode_steps, "decode steps per repetition")->capture_default_str();
  app.add_option("--reps", o.reps, "repetitions (the median is reported)")->capture_default_str();
  std::string save_path;
  app.add_option("--save-model", save_path,
                 "write the model as a llama2.c .bin file (a GGUF F32 file when the name ends "
                 "in .gguf) and exit (to run a peer such as llama.cpp on the same weights: see "
                 "bench/compare_llamacpp.sh)");
  std::string weights = "file";
  app.add_option("--weights", weights,
                 "weight storage: " + fmt::format("{}", fmt::join(weight_format_names(), ", ")) +
                     " (file = the file's own types, f32 for --synthetic; a format quantizes "
                     "the linear layers and the embedding at load)")
      ->capture_default_str();
  return run_main(app, argc, argv, [&] {
    if (threads < 0) throw Error("--threads must be >= 0");
    const WeightFormat format = parse_weight_format(weights);
    if (!save_path.empty() && format != WeightFormat::file)
      throw Error("--weights applies to the measured runs; --save-model writes the model as "
                  "generated or loaded (leave --weights out)");
    if (threads > 0) omp_set_num_threads(threads);
    const int nth = omp_get_max_threads();
    auto make_model = [&] {
      if (!model_path.empty()) return Model::load(model_path, LoadOptions{format});
      SyntheticOptions options;
      options.weights = format;
      return make_synthetic_model(synthetic, options);
    };
    if (!save_path.empty()) {
      const Model model = make_model();
      const bool gguf = std::filesystem::path(save_path).extension() == ".gguf";
      if (gguf) {
        model.save_gguf(save_path);
      } else {
        model.save(save_path);
      }
      std::printf("wrote %s (%s, %s%.1f MB)\n", save_path.c_str(), model.name().c_str(),
                  gguf ? "GGUF F32, " : "", double(std::filesystem::file_size(save_path)) / 1e6);
      return 0;
    }
    o.progress = [](const std::string& line) {
      std::fprintf(stderr, "[bench] %s\n", line.c_str());
    };

    std::fprintf(stderr, "[bench] measuring the roofs\n");
    // A roof is the best the machine can do: the best of three probes (on a shared machine one
    // probe can land on a busy moment). The workloads below report medians.
    double bw = 0.0, fma = 0.0;
    for (int r = 0; r < 3; ++r) {
      bw = std::max(bw, measure_read_bandwidth(std::size_t{512} << 20, nth, 3).read_gbs * 1e9);
      fma = std::max(fma, measure_fma_peak(nth, 3).flops);
    }
    const double eigen = measure_gemm_flops(1024, nth, 3);
    // The model is built after the probes, so its memory does not change what they measure.
    // Its load time includes the packing of the linear weights a first request would wait for.
    const double load_start = now_seconds();
    const Model model = make_model();
    model.cpu_linears();
    const double load_seconds = now_seconds() - load_start;

    const ModelConfig& c = model.config();
    std::printf("== bench_cpu_roofline: %s, %d threads\n", model.name().c_str(), nth);
    std::printf(
        "roofs: read bandwidth %.2f GB/s, FMA peak %.1f GFLOP/s (Eigen SGEMM 1024^3: "
        "%.1f GFLOP/s, %.0f%% of it); ridge %.1f FLOP/byte\n",
        bw / 1e9, fma / 1e9, eigen / 1e9, 100.0 * eigen / fma, fma / bw);
    std::printf("model: %.1f MB of weights read per token, %.2f GFLOP per token\n\n",
                model.bytes_read_per_token() / 1e6, forward_flops(c, 1, 0, 1) / 1e9);

    const ModelPoints m = measure_model_points(model, o);
    const ModelPoint& d1 = m.batched.front();
    std::printf("decode  B=1:     %9.1f tokens/s  %7.2f GB/s   %5.1f%% of the bandwidth roof\n",
                d1.tokens_per_second(), d1.bytes_per_second() / 1e9,
                100.0 * d1.bytes_per_second() / bw);
    std::printf("prefill %-7d  %9.1f tokens/s  %7.1f GFLOP/s %5.1f%% of the FMA roof\n\n",
                m.prefill.tokens, m.prefill.tokens_per_second(), m.prefill.flops_per_second() / 1e9,
                100.0 * m.prefill.flops_per_second() / fma);
    std::printf("batched decode (median step of %d, %d repetitions):\n", o.decode_steps, o.reps);
    std::printf("  %5s  %11s  %9s  %10s  %8s  %9s  %8s\n", "B", "tokens/s", "vs B=1", "FLOP/byte",
                "GB/s", "GFLOP/s", "% FMA");
    for (const ModelPoint& p : m.batched) {
      std::printf("  %5d  %11.1f  %8.2fx  %10.2f  %8.2f  %9.1f  %7.1f%%\n", p.tokens,
                  p.tokens_per_second(), p.tokens_per_second() / d1.tokens_per_second(),
                  p.intensity(), p.bytes_per_second() / 1e9, p.flops_per_second() / 1e9,
                  100.0 * p.flops_per_second() / fma);
    }
    std::printf(
        "\nBelow the ridge a step costs the weight stream (tokens/s grows with B); above "
        "it the FMA units (tokens/s flattens).\n");
    std::printf("load: %.2f s (file to packed weights); resident memory after the runs: %.0f MB\n",
                load_seconds, resident_bytes() / 1e6);
    return 0;
  });
}
