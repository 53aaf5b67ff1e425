// This machine's points on its roofline: timed kernels (see roofline_measure.hpp).
#include "inferlab/analysis/roofline_measure.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/runtime/metrics.hpp"

namespace inferlab {

namespace {

// Deterministic fill in [-0.5, 0.5): the timings must not depend on the values, and values this
// small keep float sums far from overflow and denormals.
void fill(std::vector<float>& v, unsigned seed) {
  unsigned s = seed * 2654435761u + 1u;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = float(s >> 8) / float(1u << 24) - 0.5f;
  }
}

// The median of reps after one warm-up run (page faults, thread start-up): on a shared machine
// one repetition can be off by 2x either way, the median of a few is not (a roof, the best the
// hardware can do, takes the best instead: see hardware.hpp). run(call) gets the call's index,
// to rotate over copies of the data.
template <class F>
double median_seconds(int reps, F&& run) {
  run(0);
  std::vector<double> times;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const double t0 = now_seconds();
    run(r + 1);
    times.push_back(now_seconds() - t0);
  }
  return percentile(times, 50);
}

// How many copies of `bytes` of data to cycle through so that every call finds its data in
// memory, not in the last-level cache: together they span 16x that cache (see the file comment
// of roofline_measure.hpp).
int copies_beyond_cache(std::size_t bytes) {
  const std::size_t want = 16 * last_level_cache_bytes();
  return int(std::clamp<std::size_t>((want + bytes - 1) / std::max<std::size_t>(bytes, 1), 1, 16));
}

// The weights (d_out, n_in) of a linear layer, in as many copies as copies_beyond_cache() asks,
// packed as the forward pass packs its own (kernels::PackedMatrix).
std::vector<kernels::PackedMatrix> weight_copies(int n_in, int d_out) {
  const std::size_t w_size = std::size_t(d_out) * n_in;
  std::vector<kernels::PackedMatrix> ws;
  std::vector<float> w(w_size);
  const int copies = copies_beyond_cache(w_size * sizeof(float));
  for (int i = 0; i < copies; ++i) {
    fill(w, unsigned(1 + 10 * i));
    ws.emplace_back(w.data(), n_in, d_out);
  }
  return ws;
}

}  // namespace

MeasuredPoint measure_linear_point(int tokens, int n_in, int d_out, int reps) {
  if (tokens < 1 || n_in < 1 || d_out < 1) throw Error("measure_linear_point: bad shape");
  const std::vector<kernels::PackedMatrix> ws = weight_copies(n_in, d_out);
  std::vector<float> x(std::size_t(tokens) * n_in), y(std::size_t(tokens) * d_out);
  fill(x, 2);
  const double t = median_seconds(reps, [&](int call) {
    kernels::matmul_packed(y.data(), x.data(), ws[std::size_t(call) % ws.size()], tokens);
  });
  const OpCost op =
      linear_cost(fmt::format("linear B={}", tokens), tokens, n_in, d_out, DType::f32, DType::f32);
  return {op.name, op.flops, op.bytes, t};
}

MeasuredPoint measure_decode_attention_point(int context, int n_heads, int n_kv_heads,
                                             int head_size, int reps) {
  if (context < 1 || n_heads < 1 || n_kv_heads < 1 || n_heads % n_kv_heads != 0 || head_size < 1)
    throw Error("measure_decode_attention_point: bad shape");
  const std::size_t kv = std::size_t(n_kv_heads) * head_size;
  const std::size_t cache_size = std::size_t(context) * kv;
  // Copies of the (K, V) pair, cycled through like the linear layer's weights.
  const int copies = copies_beyond_cache(2 * cache_size * sizeof(float));
  std::vector<std::vector<float>> ks(static_cast<std::size_t>(copies)), vs(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) {
    ks[i].resize(cache_size);
    vs[i].resize(cache_size);
    fill(ks[i], unsigned(3 + 10 * i));
    fill(vs[i], unsigned(4 + 10 * i));
  }
  std::vector<float> q(std::size_t(n_heads) * head_size), out(q.size());
  fill(q, 5);
  const int pos = context - 1;  // the new token is the last position; its K/V are cached
  const double t = median_seconds(reps, [&](int call) {
    const std::size_t c = std::size_t(call) % ks.size();
    kernels::attention_cpu(out.data(), q.data(), ks[c].data(), vs[c].data(), &pos, 1, n_heads,
                           n_kv_heads, head_size);
  });
  MeasuredPoint p;
  p.name = n_heads == n_kv_heads
               ? fmt::format("attention MHA S={}", context)
               : fmt::format("attention GQA g={} S={}", n_heads / n_kv_heads, context);
  p.flops = 4.0 * n_heads * head_size * double(context);
  p.bytes = (2.0 * double(context) * double(kv) + 2.0 * n_heads * head_size) * sizeof(float);
  p.seconds = t;
  return p;
}

EmpiricalCriticalBatch measure_critical_batch(
    int n_in, int d_out, const std::vector<int>& batches, int reps,
    const std::function<void(const std::string&)>& progress) {
  if (batches.empty() || batches.front() != 1 || !std::is_sorted(batches.begin(), batches.end()))
    throw Error("measure_critical_batch: batches must be ascending and start at 1");
  const int max_batch = batches.back();
  const std::vector<kernels::PackedMatrix> ws = weight_copies(n_in, d_out);
  std::vector<float> x(std::size_t(max_batch) * n_in), y(std::size_t(max_batch) * d_out);
  fill(x, 2);
  EmpiricalCriticalBatch r;
  for (int b : batches) {
    if (progress)
      progress(fmt::format("timing a {} x {} linear layer at batch {}", d_out, n_in, b));
    const double t = median_seconds(reps, [&](int call) {
      kernels::matmul_packed(y.data(), x.data(), ws[std::size_t(call) % ws.size()], b);
    });
    r.rows.push_back({b, t, b / t});
  }
  const auto& first = r.rows.front();
  const auto& last = r.rows.back();
  r.asymptote_batch = first.seconds / (last.seconds / last.batch);
  for (std::size_t i = 1; i < r.rows.size(); ++i) {
    // Gain per doubling, so rows that are not exactly 2x apart compare fairly.
    const double doublings = std::log2(double(r.rows[i].batch) / r.rows[i - 1].batch);
    const double gain =
        std::pow(r.rows[i].tokens_per_second / r.rows[i - 1].tokens_per_second, 1.0 / doublings);
    if (gain < 1.25) {
      r.knee_batch = r.rows[i - 1].batch;
      break;
    }
  }
  return r;
}

}  // namespace inferlab
