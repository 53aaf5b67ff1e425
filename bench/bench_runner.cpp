// Benchmark: end-to-end decode through the model runner, on the CPU or a GPU (--device cuda):
// tokens/s and the weight bandwidth it implies at several batch sizes, for named model shapes
// with synthetic weights. scripts/gpu_check.sh runs it on stories110M and a Llama-2-7B shape.
// Not a test: nothing is asserted.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/base/device.hpp"
#include "inferlab/serving/decode_throughput.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"

using namespace inferlab;

int main(int argc, char** argv) {
  CLI::App app{"Decode tokens/s and weight GB/s through the model runner"};
  std::vector<std::string> configs = {"stories110M"};
  std::vector<int> batches = {1, 16};
  std::string device = "cpu";
  int layers = 0, context = 128, steps = 16;
  app.add_option("--config", configs, "model shapes (named_config names)")->capture_default_str();
  app.add_option("--batch", batches, "batch sizes")->capture_default_str();
  app.add_option("--device", device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--layers", layers, "keep only the first N layers (0 = all), to fit host memory")
      ->check(CLI::Range(0, 1000));
  app.add_option("--context", context, "cached tokens per sequence")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--steps", steps, "decode steps timed per batch")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] {
    const Device dev = parse_device(device);
    require_device(dev);
    std::printf("%-12s %6s %7s %12s %14s %12s\n", "model", "layers", "batch", "step (ms)",
                "tokens/s", "weights GB/s");
    for (const std::string& name : configs) {
      SyntheticOptions o;
      o.max_layers = layers;
      o.seq_len = context + steps + 2;
      std::fprintf(stderr, "[building synthetic %s ...]\n", name.c_str());
      const Model model = make_synthetic_model(name, o);
      for (int b : batches) {
        const DecodeThroughput d = measure_decode_throughput(model, b, context, steps, dev);
        // One step reads every weight once for the whole batch.
        const double gbs = model.bytes_read_per_token() / d.step_seconds / 1e9;
        std::printf("%-12s %6d %7d %12.3f %14.1f %12.1f\n", name.c_str(), model.config().n_layers,
                    b, d.step_seconds * 1e3, d.tokens_per_second, gbs);
        std::printf("SUMMARY decode %s L=%d B=%d on %s: %.1f tokens/s, %.1f GB/s of weights\n",
                    name.c_str(), model.config().n_layers, b, device.c_str(), d.tokens_per_second,
                    gbs);
      }
    }
    return 0;
  });
}
