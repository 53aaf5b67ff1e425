// Benchmark for chapter 02 on a synthetic stories110M-shape model (weights larger than the CPU
// caches): prefill tokens/s (one matrix-matrix forward over the prompt) vs the same prompt token
// by token; cached decode tokens/s with achieved GB/s (weights + KV cache read per step) over the
// measured bandwidth; and the naive/cached step ratio at sequence lengths 64, 256 and 1024.
// Everything runs through the model runner, on the CPU or a GPU (--device).
// Not a test: nothing is asserted.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/analysis/membw.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/base/timer.hpp"

using namespace inferlab;

int main(int argc, char** argv) {
  CLI::App app{"KV cache benchmark: prefill vs token-by-token, decode bandwidth, naive/cached"};
  int threads = 0, prompt = 256, decode = 64;
  std::string shape = "stories110M", kv = "f32", device = "cpu";
  std::vector<int> lengths = {64, 256, 1024};
  app.add_option("--threads", threads, "CPU threads (0 = OpenMP default)")->check(thread_count());
  app.add_option("--shape", shape, "synthetic model shape")->capture_default_str();
  app.add_option("--prompt", prompt, "prefill length")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--decode", decode, "decode steps timed")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--lengths", lengths, "sequence lengths for the naive/cached ratio")
      ->check(integer_in(1, 1 << 20));
  app.add_option("--kv-dtype", kv, "KV storage type")->capture_default_str();
  app.add_option("--device", device, "where the forward pass runs: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  return run_main(app, argc, argv, [&] {
    const DType kv_type = parse_kv_dtype(kv);
    const Device dev = parse_device(device);
    require_device(dev);  // before the model is generated
    // Every length against the shape's context before any work (a prompt of -5 once read past
    // the end of the token buffer).
    const ModelConfig shape_config = named_config(shape);
    if (std::int64_t{prompt} + decode > shape_config.seq_len)
      throw Error(fmt::format("--prompt {} + --decode {} exceeds the context of {} ({} positions)",
                              prompt, decode, shape, shape_config.seq_len));
    for (int n : lengths)
      if (n > shape_config.seq_len)
        throw Error(fmt::format("--lengths {} exceeds the context of {} ({} positions)", n, shape,
                                shape_config.seq_len));
    if (lengths.empty()) throw Error("--lengths: give at least one length");
    if (threads > 0) omp_set_num_threads(threads);
    std::fprintf(stderr, "generating synthetic %s...\n", shape.c_str());
    const Model model = make_synthetic_model(shape);  // its size is checked before allocating
    std::fprintf(stderr, "measuring memory read bandwidth...\n");
    const BandwidthResult bw = measure_read_bandwidth(std::size_t{1} << 30, omp_get_max_threads());
    const ModelConfig& c = model.config();
    std::printf("model %s on %s, %d threads, KV %s; measured read bandwidth %.2f GB/s (host)\n\n",
                model.name().c_str(), device_name(dev), omp_get_max_threads(), dtype_name(kv_type),
                bw.read_gbs);

    std::vector<int> tokens(
        std::max(prompt + decode, *std::max_element(lengths.begin(), lengths.end())));
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int((i * 7919 + 1) % c.vocab_size);
    const std::unique_ptr<ModelRunner> runner = make_runner(model, dev);
    std::vector<float> logits;

    // Prefill: one forward over the prompt (linear layers as matrix-matrix products) vs the same
    // positions one token per forward (matrix-vector products: the weights stream T times).
    std::fprintf(stderr, "prefill of %d tokens...\n", prompt);
    KVCache cache = make_cache(*runner, 0, kv_type);
    double t0 = now_seconds();
    run_sequence(*runner, std::span<const int>(tokens.data(), prompt), 0, cache, LogitsMode::last,
                 logits);
    const double prefill_s = now_seconds() - t0;
    std::fprintf(stderr, "the same %d tokens one by one...\n", prompt);
    cache.clear();
    t0 = now_seconds();
    for (int p = 0; p < prompt; ++p)
      run_sequence(*runner, std::span<const int>(&tokens[p], 1), p, cache, LogitsMode::last,
                   logits);
    const double one_by_one_s = now_seconds() - t0;
    std::printf("prefill %d tokens in one forward:  %8.1f tokens/s\n", prompt, prompt / prefill_s);
    std::printf("the same, token by token:          %8.1f tokens/s  (prefill is %.1fx faster)\n",
                prompt / one_by_one_s, one_by_one_s / prefill_s);

    // Cached decode after the prompt: each step reads every weight once plus the KV cache so far.
    std::fprintf(stderr, "%d cached decode steps...\n", decode);
    double bytes = 0;
    t0 = now_seconds();
    for (int p = prompt; p < prompt + decode; ++p) {
      run_sequence(*runner, std::span<const int>(&tokens[p], 1), p, cache, LogitsMode::last,
                   logits);
      bytes += double(c.bytes_read_per_token()) + double(cache.bytes_per_token()) * (p + 1);
    }
    const double decode_s = now_seconds() - t0;
    const double gbs = bytes / decode_s / 1e9;
    std::printf(
        "cached decode (positions %d..%d):  %8.1f tokens/s, %.2f GB/s = %.1f%% of measured\n\n",
        prompt, prompt + decode - 1, decode / decode_s, gbs, 100 * gbs / bw.read_gbs);

    std::vector<int> positions;
    for (int n : lengths) positions.push_back(n - 1);
    std::fprintf(stderr, "naive vs cached steps at lengths");
    for (int n : lengths) std::fprintf(stderr, " %d", n);
    std::fprintf(stderr, " (the naive step at 1024 forwards 1024 tokens)...\n");
    const auto rows = compare_step_latency(model, tokens, positions, kv_type, 1, dev);
    std::printf("%10s  %12s  %12s  %10s  %s\n", "length", "naive ms", "cached ms", "ratio",
                "same logits");
    for (const StepLatency& s : rows)
      std::printf("%10d  %12.2f  %12.2f  %9.1fx  %s\n", s.position + 1, s.naive_s * 1e3,
                  s.cached_s * 1e3, s.naive_s / s.cached_s, s.identical ? "yes" : "NO");
    return 0;
  });
}
