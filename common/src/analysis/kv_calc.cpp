// The KV-cache memory calculator.
#include "inferlab/analysis/kv_calc.hpp"

#include <cmath>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

double kv_bytes_per_token(const ModelConfig& config, DType kv, double scale_bytes_per_head) {
  // 2 (one key and one value) x layers x KV heads x head size: GQA stores Nkv heads, not Nh.
  const double numbers = 2.0 * config.n_layers * config.n_kv_heads * config.head_size();
  const double scales = 2.0 * config.n_layers * config.n_kv_heads * scale_bytes_per_head;
  return numbers * dtype_bytes(kv) + scales;
}

double kv_bytes(const ModelConfig& config, DType kv, std::int64_t tokens,
                double scale_bytes_per_head) {
  if (tokens < 0) throw Error("kv_bytes: negative token count");
  return kv_bytes_per_token(config, kv, scale_bytes_per_head) * double(tokens);
}

double weight_bytes(const ModelConfig& config, DType weights) {
  return double(config.n_params()) * dtype_bytes(weights);
}

Concurrency max_concurrent_sequences(const ModelConfig& config, const ServingBudget& budget) {
  if (budget.devices < 1) throw Error("max_concurrent_sequences: need at least one device");
  if (!(budget.memory_bytes_per_device > 0.0))
    throw Error("max_concurrent_sequences: device memory must be positive");
  if (budget.context_tokens < 1) throw Error("max_concurrent_sequences: context must be >= 1");
  if (budget.reserved_fraction < 0.0 || budget.reserved_fraction >= 1.0)
    throw Error("max_concurrent_sequences: reserved_fraction must be in [0, 1)");
  Concurrency c;
  // Tensor parallelism splits both the weights and every sequence's KV heads over the
  // devices, so to first order the devices pool their memory.
  c.total_bytes = budget.memory_bytes_per_device * budget.devices;
  c.usable_bytes = c.total_bytes * (1.0 - budget.reserved_fraction);
  c.weight_bytes = weight_bytes(config, budget.weight_dtype);
  c.kv_budget_bytes = c.usable_bytes - c.weight_bytes;
  c.kv_bytes_per_sequence = kv_bytes(config, budget.kv_dtype, budget.context_tokens);
  c.max_sequences = c.kv_budget_bytes > 0.0
                        ? std::int64_t(std::floor(c.kv_budget_bytes / c.kv_bytes_per_sequence))
                        : 0;
  return c;
}

MemoryFit memory_fit(const ModelConfig& config, DType weights, DType kv, std::int64_t batch,
                     std::int64_t context, double device_bytes) {
  if (batch < 1) throw Error(fmt::format("memory_fit: batch {} must be >= 1", batch));
  if (context < 0) throw Error(fmt::format("memory_fit: context {} must be >= 0", context));
  if (!(device_bytes > 0.0)) throw Error("memory_fit: device memory must be positive");
  MemoryFit f;
  f.weight_bytes = weight_bytes(config, weights);
  f.kv_bytes = double(batch) * kv_bytes(config, kv, context);
  f.needed_bytes = f.weight_bytes + f.kv_bytes;
  f.device_bytes = device_bytes;
  f.fits = f.needed_bytes <= device_bytes;
  return f;
}

std::string memory_fit_message(const MemoryFit& fit) {
  if (fit.fits)
    return fmt::format("fits: needs {:.1f} GB of the device's {:.1f} GB", fit.needed_bytes / 1e9,
                       fit.device_bytes / 1e9);
  return fmt::format(
      "does not fit: needs {:.1f} GB (weights {:.1f} GB + KV cache {:.1f} GB), the "
      "device has {:.1f} GB",
      fit.needed_bytes / 1e9, fit.weight_bytes / 1e9, fit.kv_bytes / 1e9, fit.device_bytes / 1e9);
}

}  // namespace inferlab
