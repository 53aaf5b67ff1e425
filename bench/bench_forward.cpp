// Benchmark: the single-token forward pass (the shape of batch-1 decode) through the model
// runner, on the CPU or a GPU (--device), against this machine's memory bandwidth. Reports
// tokens/s, bytes of weights read per token, achieved GB/s and the ratio to a STREAM-style read
// probe of host memory measured in the same run (on a GPU the ratio to its HBM is
// bench_runner's). Not a test: nothing is asserted.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/base/error.hpp"
#include <fmt/format.h>

#include "inferlab/runtime/runner.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/analysis/membw.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/base/timer.hpp"

using namespace inferlab;

namespace {

struct DecodeResult {
  double tokens_per_s = 0, gbs = 0;
};

// Runs `steps` single-token forwards at positions 0..steps-1 through one cache, `reps` times,
// and keeps the best repetition (the least disturbed by the rest of the machine).
DecodeResult bench_decode(const Model& model, Device device, int steps, int reps) {
  const std::unique_ptr<ModelRunner> runner = make_runner(model, device);
  std::vector<float> logits;
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    KVCache cache = make_cache(*runner, steps);
    const double t0 = now_seconds();
    for (int pos = 0; pos < steps; ++pos) {
      const int token = (pos * 7919 + 1) % model.config().vocab_size;
      run_sequence(*runner, std::span<const int>(&token, 1), pos, cache, LogitsMode::last, logits);
    }
    best = std::min(best, now_seconds() - t0);
    std::fprintf(stderr, "  [%s] repetition %d/%d: %.1f tokens/s\r", model.name().c_str(), r + 1,
                 reps, steps / (now_seconds() - t0));
  }
  std::fprintf(stderr, "\n");
  const double per_token = best / steps;
  return {1.0 / per_token, model.bytes_read_per_token() / per_token / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Single-token forward (batch-1 decode) vs measured memory bandwidth"};
  int threads = 0, steps = 64, reps = 5;
  std::string model_path, device = "cpu";
  bool skip_large = false;
  app.add_option("--threads", threads, "CPU threads (0 = OpenMP default)")->check(thread_count());
  app.add_option("--steps", steps, "decode steps per repetition (at most the context)")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--reps", reps, "repetitions (best kept)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  app.add_option("--model", model_path,
                 "small model (default stories260K.bin when found, else a synthetic one)");
  app.add_flag("--skip-large", skip_large, "skip the synthetic stories110M model");
  app.add_option("--device", device,
                 "where the forward pass runs: cpu or cuda (the logits are "
                 "copied to the host each step, as for sampling)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  return run_main(app, argc, argv, [&] {
    const Device dev = parse_device(device);
    require_device(dev);  // before any model is generated
    // A model named on the command line must load; only the default may fall back.
    std::vector<Model> models;
    if (!model_path.empty()) {
      models.push_back(Model::load(find_model(model_path)));
    } else {
      try {
        models.push_back(Model::load(find_model("")));
      } catch (const Error& e) {
        std::fprintf(stderr, "note: %s\nusing a synthetic stories260K instead\n", e.what());
        models.push_back(make_synthetic_model("stories260K"));
      }
    }
    if (!skip_large) {
      std::fprintf(stderr, "generating synthetic stories110M weights...\n");
      models.push_back(make_synthetic_model("stories110M"));
    }
    for (const Model& m : models) {
      if (steps > m.config().seq_len)
        throw Error(fmt::format("--steps {} exceeds the context of {} ({} positions)", steps,
                                m.name(), m.config().seq_len));
    }
    if (threads > 0) omp_set_num_threads(threads);
    std::printf("device: %s, threads: %d\n", device_name(dev), omp_get_max_threads());
    std::fprintf(stderr, "measuring memory read bandwidth (1 GiB buffer)...\n");
    const BandwidthResult bw = measure_read_bandwidth(std::size_t{1} << 30, omp_get_max_threads());
    std::printf("measured read bandwidth: %.2f GB/s (%d threads, STREAM-style sum)\n\n",
                bw.read_gbs, bw.threads);

    std::printf("%-44s %12s %14s %10s %12s\n", "model", "tokens/s", "MB read/token", "GB/s",
                "of measured");
    for (const Model& m : models) {
      const DecodeResult r = bench_decode(m, dev, steps, reps);
      std::printf("%-44s %12.1f %14.2f %10.2f %11.1f%%\n", m.name().c_str(), r.tokens_per_s,
                  m.bytes_read_per_token() / 1e6, r.gbs, 100.0 * r.gbs / bw.read_gbs);
    }
    std::printf(
        "\nA model whose weights exceed the caches is bound by memory bandwidth: its "
        "ratio is the one to read.\nA model that fits in cache (stories260K) is bound by "
        "per-token overhead instead: read its tokens/s.\n");
    return 0;
  });
}
