// Model runners: the CPU one here, the CUDA one in runner_cuda.cpp, reached through the CUDA
// backend module's factory (runtime/cuda_backend.hpp) when --device cuda asks for it.
#include "inferlab/runtime/runner.hpp"

#include <cmath>

#include <fmt/format.h>

#include "inferlab/base/cuda_module.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/cuda_backend.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace inferlab {

namespace {

// The CUDA runner, made by the module (require_device() has loaded it and found a GPU).
std::unique_ptr<ModelRunner> make_cuda_runner(const Model& model) {
  using Factory = decltype(&inferlab_cuda_backend_make_runner);
  const auto make =
      reinterpret_cast<Factory>(cuda_module_function("inferlab_cuda_backend_make_runner"));
  char error[512] = "";
  ModelRunner* runner = make(&model, error, sizeof(error));
  if (runner == nullptr) throw Error(fmt::format("--device cuda: {}", error));
  return std::unique_ptr<ModelRunner>(runner);
}

// The CPU runner is the ForwardPass of forward.hpp over host pools.
class CpuRunner final : public ModelRunner {
 public:
  explicit CpuRunner(const Model& model) : ModelRunner(model), pass_(model) {}
  Device device() const override { return Device::cpu; }
  std::unique_ptr<KVPool> make_pool(int num_blocks, int block_size, DType type) const override {
    return std::make_unique<HostKVPool>(config(), num_blocks, block_size, type);
  }
  void step(std::span<const BatchEntry> batch, LogitsMode mode,
            std::vector<float>& logits) override {
    pass_.forward_batch(batch, logits, mode);
  }

 private:
  ForwardPass pass_;
};

}  // namespace

std::unique_ptr<ModelRunner> make_runner(const Model& model, Device device) {
  require_device(device);
  if (device == Device::cuda) return make_cuda_runner(model);
  return std::make_unique<CpuRunner>(model);
}

void ModelRunner::step_greedy(std::span<const BatchEntry> batch, std::vector<int>& next) {
  step(batch, LogitsMode::last, greedy_logits_);
  const std::size_t V = static_cast<std::size_t>(config().vocab_size);
  next.resize(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::span<const float> row(greedy_logits_.data() + i * V, V);
    // As the Sampler does: a NaN would be skipped by argmax, so it is refused.
    for (std::size_t t = 0; t < V; ++t)
      if (std::isnan(row[t])) throw Error(fmt::format("sampling: logit {} is NaN", t));
    next[i] = argmax(row);
  }
}

KVCache make_cache(const ModelRunner& runner, int capacity, DType type) {
  const int S = capacity == 0 ? runner.config().seq_len : capacity;
  if (S <= 0 || S > runner.config().seq_len) {
    throw Error(
        fmt::format("KV cache capacity {} outside [1, seq_len = {}]", S, runner.config().seq_len));
  }
  return KVCache(runner.make_pool(1, S, type));
}

void run_sequence(ModelRunner& runner, std::span<const int> tokens, int start_pos,
                  KVSequence& cache, LogitsMode mode, std::vector<float>& logits) {
  const BatchEntry entry{tokens, start_pos, &cache};
  runner.step(std::span<const BatchEntry>(&entry, 1), mode, logits);
}

}  // namespace inferlab
