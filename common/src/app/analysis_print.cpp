// The longer tables of chapters 02 and 03 (see analysis_print.hpp).
#include "inferlab/app/analysis_print.hpp"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/base/units.hpp"

namespace inferlab {

std::string critical_batch_text(double batch) {
  return std::isfinite(batch) ? fmt::format("{:.0f}", batch)
                              : std::string("none (never compute-bound)");
}

void print_kv_quality(const std::vector<KVQuality>& quality) {
  std::printf(
      "\nKV storage type vs f32 over %zu prompts (teacher-forced logits; free-running "
      "greedy tokens):\n",
      kv_quality_prompts().size());
  std::printf("  %5s  %11s  %13s  %14s  %16s  %15s\n", "type", "bytes/token", "max |dlogit|",
              "mean |dlogit|", "argmax changed", "tokens changed");
  for (const KVQuality& k : quality)
    std::printf("  %5s  %11zu  %13.5f  %14.6f  %9d / %-5d  %8d in %d/%d\n", dtype_name(k.type),
                k.bytes_per_token, k.max_abs_logit_diff, k.mean_abs_logit_diff, k.argmax_changed,
                k.positions, k.tokens_changed, k.sequences_changed, k.sequences);
}

void print_kv_sizing(const KVSizingTable& t) {
  const ModelConfig& c = t.config;
  std::printf(
      "\nKV cache calculator: %s (%d layers x %d KV heads x head dim %d x 2 for K and V), "
      "%lld tokens of context\n",
      t.name.c_str(), c.n_layers, c.n_kv_heads, c.head_size(),
      static_cast<long long>(t.context_tokens));
  std::printf("  %5s  %14s  %26s  %s\n", "type", "bytes/token", "per sequence",
              "sequences that fit");
  std::string one_gpu_note;  // set when bf16 weights + one bf16 sequence exceed one 80 GB GPU
  for (const KVSizingRow& r : t.rows) {
    std::printf("  %5s  %14.0f  %26s  %lld on %dx 80 GB\n", dtype_name(r.dtype), r.bytes_per_token,
                format_bytes(r.bytes_per_sequence).c_str(), static_cast<long long>(r.max_sequences),
                r.gpus);
    if (r.dtype == DType::bf16 && !r.one_gpu.fits) one_gpu_note = memory_fit_message(r.one_gpu);
  }
  std::printf("  (GiB = 2^30 bytes, GB = 10^9 bytes; weights in bf16, no memory reserved)\n");
  if (!one_gpu_note.empty())
    std::printf("  %s on one 80 GB GPU, with one bf16 sequence: %s\n", t.name.c_str(),
                one_gpu_note.c_str());
}

void print_linear_intensity(const RooflinePrediction& p) {
  std::printf("linear layers: arithmetic intensity (FLOP/byte) vs tokens in the batch\n  %8s",
              "tokens");
  for (const OpCost& op : p.linear.front().ops) std::printf("  %10s", op.name.c_str());
  std::printf("  %s\n", "bound");
  for (const LinearIntensityRow& row : p.linear) {
    std::printf("  %8d", row.tokens);
    for (const OpCost& op : row.ops) std::printf("  %10.1f", op.intensity());
    std::printf("  %s\n", row.memory_bound ? "memory" : "compute");
  }
  std::printf("  ~%g x tokens in the batch: the weights are read once and used by every token.\n\n",
              2.0 / dtype_bytes(p.cost.weight_dtype));
}

void print_thread_roofs(const MachineRoofline& measured) {
  std::printf("this machine, per thread count:\n  %7s  %14s  %16s  %16s\n", "threads", "read GB/s",
              "FMA GFLOP/s", "Eigen GFLOP/s");
  for (const ThreadMeasurement& r : measured.machine.per_threads)
    std::printf("  %7d  %14.2f  %16.2f  %16.2f\n", r.threads, r.read_bandwidth / 1e9,
                r.fma_flops / 1e9, r.gemm_flops / 1e9);
  std::printf("\n");
}

void print_measured_roofline(const RooflineReport& report) {
  const MachineRoofline& m = *report.measured;
  const Hardware& hw = report.prediction.hardware;
  std::printf(
      "\nmeasured on this machine: the core's kernels (float32), median of the repetitions\n");
  std::printf("  %-26s  %10s  %10s  %11s  %11s  %12s\n", "kernel", "FLOP/byte", "ms", "GB/s",
              "GFLOP/s", "roof GFLOP/s");
  auto row = [&](const MeasuredPoint& k) {
    std::printf("  %-26s  %10.2f  %10.3f  %11.2f  %11.2f  %12.2f\n", k.name.c_str(), k.intensity(),
                k.seconds * 1e3, k.bytes_per_second() / 1e9, k.flops_per_second() / 1e9,
                attainable_flops(hw, k.intensity()) / 1e9);
  };
  for (const MeasuredPoint& k : m.linear) row(k);
  for (const MeasuredPoint& k : m.attention) row(k);
  // Say which points are impossible, instead of drawing an impossible plot without a word.
  for (const AboveRoof& a : report.above_roof)
    std::printf(
        "  note: %s runs %.0f%% above its roof: the roofs were measured low (a busy "
        "machine) or its data stayed in a cache; rerun on a quiet machine with "
        "--threads 1\n",
        a.name.c_str(), a.percent);
  std::printf("\n  batch sweep of the %d x %d layer (matmul_packed):\n  %6s  %10s  %12s  %14s\n",
              m.d_out, m.n_in, "batch", "step ms", "tokens/s", "gain vs prev");
  for (std::size_t i = 0; i < m.sweep.rows.size(); ++i) {
    const auto& r = m.sweep.rows[i];
    std::printf("  %6d  %10.3f  %12.1f", r.batch, r.seconds * 1e3, r.tokens_per_second);
    if (i > 0)
      std::printf("  %13.2fx", r.tokens_per_second / m.sweep.rows[i - 1].tokens_per_second);
    std::printf("\n");
  }
  std::printf(
      "  critical batch, empirical: %.1f (where the flat and the linear asymptotes of the "
      "step time meet); tokens/s stops doubling with the batch at %s\n",
      m.sweep.asymptote_batch,
      m.sweep.knee_batch > 0 ? fmt::format("batch {}", m.sweep.knee_batch).c_str()
                             : "no batch in the sweep");
  std::printf(
      "  critical batch, formula B* = n d 4 / (2 n d BW/P - (n+d) 4) on the measured roofs "
      "(P = FMA peak %.1f GFLOP/s): %s\n",
      hw.peak_flops / 1e9, critical_batch_text(m.formula_batch).c_str());
  std::printf(
      "  the same formula with matmul_packed's own best, P = %.1f GFLOP/s (%.0f %% of the peak): "
      "%s  <- compare with the empirical value\n",
      m.kernel_peak_flops / 1e9, 100.0 * m.kernel_peak_flops / hw.peak_flops,
      critical_batch_text(m.kernel_formula_batch).c_str());
  if (!m.model) {
    std::printf("\n  the whole model: %s\n", m.model_note.c_str());
    return;
  }
  const ModelPoint& d1 = m.model->batched.front();
  std::printf("\n  the whole model (%s, random weights), median of the repetitions:\n",
              report.config_name.c_str());
  std::printf("  %-16s  %10s  %12s  %10s  %11s  %12s  %8s\n", "workload", "FLOP/byte", "tokens/s",
              "GB/s", "GFLOP/s", "roof GFLOP/s", "vs B=1");
  auto model_row = [&](const ModelPoint& w) {
    std::printf("  %-16s  %10.2f  %12.1f  %10.2f  %11.2f  %12.2f  %7.2fx\n", w.name.c_str(),
                w.intensity(), w.tokens_per_second(), w.bytes_per_second() / 1e9,
                w.flops_per_second() / 1e9, attainable_flops(hw, w.intensity()) / 1e9,
                w.tokens_per_second() / d1.tokens_per_second());
  };
  model_row(m.model->prefill);
  for (const ModelPoint& w : m.model->batched) model_row(w);
}

}  // namespace inferlab
