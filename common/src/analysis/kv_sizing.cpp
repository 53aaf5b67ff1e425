// The KV calculator applied to whole models: chapter 02's sizing table and prediction check.
#include "inferlab/analysis/kv_sizing.hpp"

namespace inferlab {

Concurrency fewest_devices_for_one_sequence(const ModelConfig& config, ServingBudget& budget,
                                            int max_devices) {
  Concurrency conc = max_concurrent_sequences(config, budget);
  while (conc.max_sequences == 0 && budget.devices < max_devices) {
    ++budget.devices;
    conc = max_concurrent_sequences(config, budget);
  }
  return conc;
}

KVSizingTable kv_sizing_table(const std::string& name, std::int64_t context) {
  KVSizingTable t{name, named_config(name), context, {}};
  for (DType d : all_dtypes()) {
    KVSizingRow row;
    row.dtype = d;
    row.bytes_per_token = kv_bytes_per_token(t.config, d);
    row.bytes_per_sequence = kv_bytes(t.config, d, context);
    ServingBudget budget;  // 80 GB devices, bf16 weights
    budget.kv_dtype = d;
    budget.context_tokens = context;
    row.max_sequences = fewest_devices_for_one_sequence(t.config, budget).max_sequences;
    row.gpus = budget.devices;
    // One sequence next to the bf16 weights on a single 80 GB GPU: the question a learner asks
    // first, answered with what it needs when the answer is no.
    row.one_gpu = memory_fit(t.config, DType::bf16, d, 1, context, 80e9);
    t.rows.push_back(row);
  }
  return t;
}

KVPredictionCheck check_kv_prediction(const ModelConfig& config, DType type) {
  // The calculator counts the int8 storage's per-row scales as extra bytes per head.
  const double scale_bytes = type == DType::int8 ? sizeof(float) : 0.0;
  return {type, kv_bytes_per_token(config, type, scale_bytes),
          KVCache(config, 1, type).bytes_per_token()};
}

}  // namespace inferlab
