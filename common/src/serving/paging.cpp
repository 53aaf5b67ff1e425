// Chapter 05's measurements of KV memory.
#include "inferlab/serving/paging.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/base/units.hpp"

namespace inferlab {

MemorySummary memory_summary(const EngineRun& run) {
  MemorySummary m;
  m.allocator = run.allocator;
  m.kv_bytes_budget = run.kv_capacity_tokens * run.kv_bytes_per_token;
  double wasted = 0.0, reserved = 0.0;
  for (const EngineStep& s : run.steps) {
    m.peak_kv_bytes_used = std::max(m.peak_kv_bytes_used, s.kv_used * run.kv_bytes_per_token);
    m.peak_kv_bytes_reserved =
        std::max(m.peak_kv_bytes_reserved, s.kv_reserved * run.kv_bytes_per_token);
    m.max_concurrent_sequences = std::max(m.max_concurrent_sequences, s.running);
    m.peak_bytes_saved_by_sharing =
        std::max(m.peak_bytes_saved_by_sharing,
                 (s.kv_logical - std::min(s.kv_logical, s.kv_used)) * run.kv_bytes_per_token);
    const double dt = std::max(s.end - s.start, 0.0);
    wasted += dt * double(s.kv_reserved - std::min(s.kv_used, s.kv_reserved));
    reserved += dt * double(s.kv_reserved);
  }
  m.waste_fraction = reserved > 0.0 ? wasted / reserved : 0.0;
  m.preemptions = run.preemptions;
  m.swapped_bytes = run.swapped_bytes;
  m.throughput_tokens_per_s = run.metrics.throughput_tokens;
  m.block_size = run.block_size;
  m.blocks_total = run.block_size > 0 ? run.kv_capacity_tokens / std::size_t(run.block_size) : 0;
  return m;
}

SwapVsRecompute swap_vs_recompute(const ModelConfig& config, const Hardware& hardware,
                                  const CostOptions& cost, long tokens, double link_bytes_per_s) {
  SwapVsRecompute r;
  r.tokens = tokens;
  const double bytes = double(tokens) * kv_bytes_per_token(config, cost.kv_dtype);
  r.swap_seconds = 2.0 * bytes / link_bytes_per_s;
  StepShape shape;
  shape.add_prefill(tokens, 0);
  r.recompute_seconds = step_time_seconds(config, hardware, shape, cost);
  return r;
}

double measure_attention_step_seconds(const ModelConfig& config, int seqs, int context,
                                      int block_size, int reps) {
  const int KV = config.kv_dim(), Nh = config.n_heads, Nkv = config.n_kv_heads;
  const int hs = config.head_size();
  const int B = block_size > 0 ? block_size : context;
  const int per_seq = ceil_div(context, B);
  const int blocks = per_seq * seqs;
  std::vector<float> keys(std::size_t(blocks) * B * KV), values(keys.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : keys) x = u(rng);
  for (float& x : values) x = u(rng);
  // Physical blocks handed out in a shuffled order, as a busy pool would.
  std::vector<int> ids(static_cast<std::size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  if (block_size > 0) std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<float> q(std::size_t(Nh) * hs), out(q.size());
  for (float& x : q) x = u(rng);
  const int pos = context - 1;
  std::vector<double> times;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const double t0 = now_seconds();
    for (int s = 0; s < seqs; ++s) {
      kernels::KVRowsView k;
      kernels::KVRowsView v;
      if (block_size > 0) {
        k = {DType::f32, keys.data(), nullptr, &ids[std::size_t(s * per_seq)], B};
        v = {DType::f32, values.data(), nullptr, &ids[std::size_t(s * per_seq)], B};
      } else {  // contiguous: sequence s owns rows s*context.. of the same storage
        k = {DType::f32, keys.data() + std::size_t(s) * context * KV, nullptr, nullptr, 0};
        v = {DType::f32, values.data() + std::size_t(s) * context * KV, nullptr, nullptr, 0};
      }
      kernels::attention_kv_cpu(out.data(), q.data(), k, v, &pos, 1, Nh, Nkv, hs);
    }
    times.push_back(now_seconds() - t0);
  }
  std::nth_element(times.begin(), times.begin() + std::ptrdiff_t(times.size() / 2), times.end());
  return times[times.size() / 2];
}

std::vector<SwapVsRecompute> swap_vs_recompute_table(const ModelConfig& config,
                                                     const Hardware& hardware,
                                                     const CostOptions& cost,
                                                     double link_bytes_per_s) {
  std::vector<SwapVsRecompute> rows;
  for (long t : {256L, 1024L, 4096L, 16384L, 65536L}) {
    if (t > config.seq_len) break;
    rows.push_back(swap_vs_recompute(config, hardware, cost, t, link_bytes_per_s));
  }
  return rows;
}

BlockSizeSweep block_size_sweep(const std::function<EngineRun(const MemoryConfig&)>& serve,
                                const MemoryConfig& memory, const ModelConfig& config) {
  BlockSizeSweep s;
  s.context = std::min(1024, config.seq_len);
  s.contiguous_seconds = measure_attention_step_seconds(config, s.sequences, s.context, 0, s.reps);
  for (int b : {1, 4, 8, 16, 32, 64, 128}) {
    MemoryConfig m = memory;
    m.allocator = Allocator::paged;
    m.block_size = b;
    const MemorySummary summary = memory_summary(serve(m));
    BlockSizeRow row;
    row.block_size = b;
    row.waste_fraction = summary.waste_fraction;
    row.max_concurrent_sequences = summary.max_concurrent_sequences;
    row.attention_seconds =
        measure_attention_step_seconds(config, s.sequences, s.context, b, s.reps);
    row.vs_contiguous = row.attention_seconds / s.contiguous_seconds;
    s.rows.push_back(row);
  }
  return s;
}

}  // namespace inferlab
