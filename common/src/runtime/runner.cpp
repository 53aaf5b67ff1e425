// Model runners: the CPU one here, the CUDA one in runner_cuda.cpp, reached through the CUDA
// backend module's factory (runtime/cuda_backend.hpp) when --device cuda asks for it.
#include "inferlab/runtime/runner.hpp"

#include <cmath>

#include <fmt/format.h>

#include "inferlab/base/cuda_module.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/cuda_backend.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace inferlab {

namespace {

// A tree must name, for every row from base to the entry's last one, a parent row before it.
void validate_tree(const TreeMask& tree, int end_row) {
  if (tree.base < 0) throw Error(fmt::format("forward: tree base {} is negative", tree.base));
  if (end_row > tree.base && tree.parents.size() < std::size_t(end_row - tree.base)) {
    throw Error(fmt::format("forward: the tree names {} parents but rows {}..{} need them",
                            tree.parents.size(), tree.base, end_row - 1));
  }
  for (int r = tree.base; r < end_row; ++r) {
    const int parent = tree.parents[std::size_t(r - tree.base)];
    if (parent != -1 && (parent < tree.base || parent >= r)) {
      throw Error(fmt::format("forward: tree row {} has parent {} (must be -1 or in [{}, {}))", r,
                              parent, tree.base, r));
    }
  }
}

// The CUDA runner, made by the module (require_device() has loaded it and found a GPU).
std::unique_ptr<ModelRunner> make_cuda_runner(const Model& model) {
  using Factory = decltype(&inferlab_cuda_backend_make_runner);
  const auto make =
      reinterpret_cast<Factory>(cuda_module_function("inferlab_cuda_backend_make_runner"));
  char error[512] = "";
  ModelRunner* runner = make(&model, error, sizeof(error));
  if (runner == nullptr) throw ParameterError("device", fmt::format("cuda: {}", error));
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

void validate_batch(std::span<const BatchEntry> batch, const ModelConfig& config) {
  if (batch.empty()) throw Error("forward: empty batch");
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const BatchEntry& e = batch[b];
    const int n = static_cast<int>(e.tokens.size());
    if (n == 0) throw Error("forward: no tokens");
    if (e.cache == nullptr) throw Error("forward: batch entry without a cache");
    for (std::size_t o = 0; o < b; ++o) {
      if (batch[o].cache == e.cache) throw Error("forward: two batch entries share one cache");
    }
    const ModelConfig& kv = e.cache->pool().config();
    if (kv.n_layers != config.n_layers || kv.kv_dim() != config.kv_dim())
      throw Error("forward: the KV pool is for another model");
    if (e.cache->length() != e.start_pos) {
      throw Error(fmt::format("forward: cache holds {} positions but start_pos is {}",
                              e.cache->length(), e.start_pos));
    }
    if (e.start_pos + n > e.cache->capacity()) {
      throw Error(fmt::format("forward: positions {}..{} exceed the context of {} tokens",
                              e.start_pos, e.start_pos + n - 1, e.cache->capacity()));
    }
    for (int tok : e.tokens) {
      if (tok < 0 || tok >= config.vocab_size)
        throw Error(fmt::format("forward: token id {} outside [0, {})", tok, config.vocab_size));
    }
    if (e.tree) validate_tree(*e.tree, e.start_pos + n);
  }
}

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
