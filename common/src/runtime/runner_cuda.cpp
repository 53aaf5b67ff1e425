// The CUDA model runner: weights resident on the GPU (float32, or Q8_0 / Q4_0 blocks as the
// CPU core stores them), KV pools in device memory, one batched step per call
// (CudaForwardPass::forward_batch, forward_cuda.cu), logits copied back for host sampling.
// Built into the CUDA backend module (libinferlab_cuda_backend.so), which exports only the C
// functions of runtime/cuda_backend.hpp at the end of this file.
#include <cstdio>

#include <fmt/format.h>

#include "forward_cuda.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/runtime/cuda_backend.hpp"
#include "inferlab/runtime/cuda_weights.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

namespace {

// A KV pool in device memory (float32: the CUDA kernels read f32 caches only).
class DeviceKVPool final : public KVPool {
 public:
  DeviceKVPool(const ModelConfig& config, int num_blocks, int block_size)
      : KVPool(config, num_blocks, block_size, DType::f32),
        pool_(config.n_layers, config.kv_dim(), num_blocks, block_size) {}
  Device device() const override { return Device::cuda; }
  void copy_block(int src, int dst) override {
    check_block(src, "copy_block");
    check_block(dst, "copy_block");
    pool_.copy_block(src, dst);
  }
  void copy_row(std::size_t, std::size_t) override {
    throw Error(
        "copy_row: not built for the CUDA KV pool (speculative tree decoding runs on the CPU)");
  }
  void read_block(int id, std::span<std::uint8_t> out) const override {
    check_block(id, "read_block");
    if (out.size() != bytes_per_block()) throw Error("read_block: wrong buffer size");
    pool_.read_block(id, reinterpret_cast<float*>(out.data()));
  }
  void write_block(int id, std::span<const std::uint8_t> in) override {
    check_block(id, "write_block");
    if (in.size() != bytes_per_block()) throw Error("write_block: wrong buffer size");
    pool_.write_block(id, reinterpret_cast<const float*>(in.data()));
  }
  cuda::CudaKVPool& device_pool() { return pool_; }

 private:
  mutable cuda::CudaKVPool pool_;
};

// The model on the device: a float model's tensors as they are; a block model's matrices as
// the CPU core keeps them (CpuLinears, the stored embedding), each uploaded as its blocks.
// A tensor stored in a type without a CUDA kernel is refused, named (cuda_weights_problem).
std::unique_ptr<cuda::CudaForwardPass> upload(const Model& model) {
  if (model.float_weights())
    return std::make_unique<cuda::CudaForwardPass>(model.config(), model.weights());
  const std::string problem = cuda_weights_problem(model);
  if (!problem.empty())
    throw Error(fmt::format("the CUDA forward pass cannot run this model: {}", problem));
  auto blocks = [](const kernels::QuantMatrix& m) { return cuda::HostBlocks{m.type(), m.row(0)}; };
  const CpuLinears& l = model.cpu_linears();
  cuda::BlockWeights w;
  w.token_embedding = blocks(model.stored_embedding());
  const std::pair<std::vector<cuda::HostBlocks>*, const std::vector<LinearWeight>*> lists[] = {
      {&w.wq, &l.wq}, {&w.wk, &l.wk}, {&w.wv, &l.wv}, {&w.wo, &l.wo},
      {&w.w1, &l.w1}, {&w.w2, &l.w2}, {&w.w3, &l.w3}};
  for (const auto& [out, in] : lists) {
    // A first_layers_view() shares its base's longer lists: this model's layers only.
    for (int layer = 0; layer < model.config().n_layers; ++layer)
      out->push_back(blocks((*in)[std::size_t(layer)].stored));
  }
  if (!model.config().shared_classifier) w.wcls = blocks(l.wcls.stored);
  w.rms_att = model.weights().rms_att;
  w.rms_ffn = model.weights().rms_ffn;
  w.rms_final = model.weights().rms_final;
  return std::make_unique<cuda::CudaForwardPass>(model.config(), w);
}

class CudaRunner final : public ModelRunner {
 public:
  explicit CudaRunner(const Model& model) : ModelRunner(model), gpu_(upload(model)) {}
  Device device() const override { return Device::cuda; }
  std::unique_ptr<KVPool> make_pool(int num_blocks, int block_size, DType type) const override {
    if (type != DType::f32) {
      throw ParameterError(
          "kv_dtype",
          fmt::format("{}: the CUDA backend stores the KV cache in f32 only", dtype_name(type)));
    }
    return std::make_unique<DeviceKVPool>(config(), num_blocks, block_size);
  }
  void step(std::span<const BatchEntry> batch, LogitsMode mode,
            std::vector<float>& logits) override {
    DeviceKVPool& pool = check_batch(batch, mode);
    logits.resize(rows_ * std::size_t(config().vocab_size));
    gpu_->forward_batch(entries_.data(), static_cast<int>(entries_.size()), pool.device_pool(),
                        mode == LogitsMode::all, logits.data());
    logits_bytes_copied_ += logits.size() * sizeof(float);
    advance(batch);
  }

  // The argmax on the device (argmax_cuda, lowest id on a tie): only the ids come back.
  void step_greedy(std::span<const BatchEntry> batch, std::vector<int>& next) override {
    DeviceKVPool& pool = check_batch(batch, LogitsMode::last);
    next.resize(batch.size());
    gpu_->forward_batch_greedy(entries_.data(), static_cast<int>(entries_.size()),
                               pool.device_pool(), next.data());
    logits_bytes_copied_ += next.size() * sizeof(int);
    advance(batch);
  }

 private:
  // Checks every entry (nothing is changed on an error): validate_batch(), then what the GPU
  // pass adds. Fills entries_ and rows_, and returns the one device pool the caches live in.
  DeviceKVPool& check_batch(std::span<const BatchEntry> batch, LogitsMode mode) {
    validate_batch(batch, config());
    DeviceKVPool* pool = nullptr;
    entries_.clear();
    rows_ = 0;
    for (const BatchEntry& e : batch) {
      // The CUDA attention kernels are causal only: a tree entry would be attended wrongly.
      if (e.tree != nullptr)
        throw Error(
            "forward: the CUDA runner has no tree attention (speculative tree "
            "verification runs on the CPU)");
      auto* p = dynamic_cast<DeviceKVPool*>(&e.cache->pool());
      if (p == nullptr) throw Error("forward: the CUDA runner needs KV pools it made itself");
      if (pool != nullptr && p != pool)
        throw Error("forward: the CUDA runner runs a batch over one KV pool at a time");
      pool = p;
      // The attention workspace is sized for positions below seq_len.
      const int end = e.start_pos + static_cast<int>(e.tokens.size());
      if (end > config().seq_len) {
        throw Error(fmt::format("forward: positions {}..{} exceed the context of {} tokens",
                                e.start_pos, end - 1, config().seq_len));
      }
      const auto& blocks = e.cache->blocks();
      entries_.push_back({e.tokens.data(), static_cast<int>(e.tokens.size()), e.start_pos,
                          blocks.data(), static_cast<int>(blocks.size())});
      rows_ += mode == LogitsMode::all ? e.tokens.size() : 1;
    }
    return *pool;
  }

  // After a successful step every entry's cache holds its new positions.
  static void advance(std::span<const BatchEntry> batch) {
    for (const BatchEntry& e : batch)
      e.cache->set_length(e.start_pos + static_cast<int>(e.tokens.size()));
  }

  std::unique_ptr<cuda::CudaForwardPass> gpu_;
  std::vector<cuda::CudaBatchEntry> entries_;
  std::size_t rows_ = 0;  // logits rows of the step being run
};

}  // namespace

}  // namespace inferlab

namespace {

// Writes @p text into a caller's buffer, truncated and NUL-terminated.
void write_reason(char* out, std::size_t size, const char* text) {
  if (out != nullptr && size > 0) std::snprintf(out, size, "%s", text);
}

}  // namespace

extern "C" {

int inferlab_cuda_backend_abi() { return inferlab::kCudaModuleAbi; }

int inferlab_cuda_backend_device_available(char* why, std::size_t why_size) {
  try {
    std::string reason;
    if (inferlab::cuda::cuda_device_available(&reason)) return 1;
    write_reason(why, why_size, reason.c_str());
  } catch (const std::exception& e) {
    write_reason(why, why_size, e.what());
  }
  return 0;
}

inferlab::ModelRunner* inferlab_cuda_backend_make_runner(const inferlab::Model* model, char* error,
                                                         std::size_t error_size) {
  try {
    return new inferlab::CudaRunner(*model);
  } catch (const std::exception& e) {
    write_reason(error, error_size, e.what());
  } catch (...) {
    write_reason(error, error_size, "unknown error");
  }
  return nullptr;
}

}  // extern "C"
