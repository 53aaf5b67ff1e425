#pragma once
// Private to the kernels library: the fast CPU attention loop behind every fast version in
// attention.hpp (attention_cpu, attention_kv_cpu, attention_kv_rows_cpu). A "loader" reads
// element i of the cached row of (position, KV head) `rh` and its scale, so the same loop serves
// every storage type.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__FMA__)
#include <immintrin.h>
#endif

#include <Eigen/Core>  // Eigen::half

#include "inferlab/kernels/softmax.hpp"

namespace inferlab::kernels::detail {

// The loaders of the KV storage types (kv_quant.hpp): element i of the head `rh`, and the
// head's scale.
struct LoadF32 {
  const float* d;
  int hs;
  float scale(std::size_t) const { return 1.0f; }
  float at(std::size_t rh, int i) const { return d[rh * hs + i]; }
};
struct LoadF16 {
  const Eigen::half* d;
  int hs;
  float scale(std::size_t) const { return 1.0f; }
  float at(std::size_t rh, int i) const { return float(d[rh * hs + i]); }
};
struct LoadI8 {
  const std::int8_t* d;
  const float* s;
  int hs;
  // The scale factors out of the dot product: sum(q * s * k8) = s * sum(q * k8).
  float scale(std::size_t rh) const { return s[rh]; }
  float at(std::size_t rh, int i) const { return float(d[rh * hs + i]); }
};

// Eight float lanes (GCC/Clang vector extension): one AVX register, two SSE ones. Used where
// the head size is a compile-time multiple of 8, so the lane loops below are whole vectors.
typedef float V8 __attribute__((vector_size(8 * sizeof(float))));

// acc += a * b, rounded once where the CPU has FMA. Written out, not left to the compiler's
// contraction of `acc += a * b`: GCC contracts that expression in some loops and not in
// others, and every path below must give a score or an output element the same bits,
// whatever loop computes it.
// Without FMA (x86-64 before v3) it is a multiply and an add everywhere; other CPUs use fmaf
// lane by lane, which they vectorise. (acc is updated in place rather than returned: see
// load8 on returning 32-byte vectors.)
inline void mul_add8(V8& acc, const V8& a, const V8& b) {
#if defined(__FMA__)
  acc = (V8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)acc);
#elif defined(__x86_64__) || defined(__i386__)
  acc = acc + a * b;  // no FMA instruction in this build: nothing to contract into
#else
  for (int l = 0; l < 8; ++l) acc[l] = __builtin_fmaf(a[l], b[l], acc[l]);
#endif
}

// Elements i..i+7 of row `rh` as a vector: one load from a float cache, a conversion otherwise.
// (An output parameter, not a return value: returning a 32-byte vector from a function built
// without AVX changes the calling convention, and GCC warns about it.)
template <class Load>
inline void load8(V8& r, const Load& ld, std::size_t rh, int i) {
  if constexpr (std::is_same_v<Load, LoadF32>) {
    std::memcpy(&r, ld.d + rh * ld.hs + i, sizeof r);
  } else {
    float lanes[8];
    for (int l = 0; l < 8; ++l) lanes[l] = ld.at(rh, i + l);
    std::memcpy(&r, lanes, sizeof r);
  }
}

// The dot products of four positions from their eight lanes each: dots[j] =
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)) of the j-th, exactly the one-position
// expression in attend_rows, computed for the four at once with shuffles.
inline void reduce4(float* dots, V8 a, V8 b, V8 c, V8 d) {
  typedef float V4 __attribute__((vector_size(4 * sizeof(float))));
  auto fold = [](V8 v) -> V4 {  // (l0 + l4, l1 + l5, l2 + l6, l3 + l7)
    return __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
  };
  const V4 ha = fold(a), hb = fold(b), hc = fold(c), hd = fold(d);
  // (h0 + h1, h2 + h3) of two positions side by side.
  const V4 ab =
      __builtin_shufflevector(ha, hb, 0, 2, 4, 6) + __builtin_shufflevector(ha, hb, 1, 3, 5, 7);
  const V4 cd =
      __builtin_shufflevector(hc, hd, 0, 2, 4, 6) + __builtin_shufflevector(hc, hd, 1, 3, 5, 7);
  // (h0 + h1) + (h2 + h3) of all four.
  const V4 r =
      __builtin_shufflevector(ab, cd, 0, 2, 4, 6) + __builtin_shufflevector(ab, cd, 1, 3, 5, 7);
  std::memcpy(dots, &r, sizeof r);
}

// Where position s is stored: row s of a contiguous cache, or a row found through a block table
// (PagedAttention). Only the address changes, never the order of the arithmetic.
struct RowMap {
  const int* block_table = nullptr;
  int block_size = 0;
  std::size_t operator()(int s) const {
    if (block_table == nullptr) return std::size_t(s);
    return std::size_t(block_table[s / block_size]) * block_size + std::size_t(s % block_size);
  }
};

// Which cache positions one query attends to, in order. The causal case is positions 0..p; a
// listed one (tree attention, chapter 07) is an explicit ascending list. The loop below is the
// same for both, so a listed chain 0..p gives the causal result bit for bit.
struct CausalRows {
  int n;  // p + 1
  int size() const { return n; }
  int operator[](int s) const { return s; }
};
struct ListedRows {
  const int* rows;
  int n;
  int size() const { return n; }
  int operator[](int s) const { return rows[s]; }
};

// The three steps of one query head's attention: scores, softmax, weighted sum of values.
//
// Step 1, the scores of positions rows[0 .. n): scores[s] = (q . k_s) * row scale / sqrt(hs).
// HS > 0 fixes the head size at compile time (the common sizes: the loops then unroll
// completely, which matters for tiny heads like stories260K's 8); HS = 0 reads it from
// head_size. Both perform the same operations in the same order.
template <int HS, class KLoad, class Rows>
void score_rows(float* scores, const float* q, const KLoad& kl, const Rows& rows, int kv_head,
                int n_kv_heads, int head_size, const RowMap& row) {
  if constexpr (HS > 0) head_size = HS;
  const float scale = 1.0f / std::sqrt(float(head_size));
  const int n = rows.size();
  int s = 0;
  if constexpr (HS > 0 && HS % 8 == 0) {
    // Four positions at a time: four independent chains of multiply-adds (one position's chain
    // waits 4 cycles per step; four keep the FMA units busy), then their four reductions done
    // together. reduce4 adds the same pairs in the same order as the one-position expression
    // below, so a position's score has the same bits whichever path computes it.
    V8 qv[HS / 8];
    std::memcpy(qv, q, sizeof qv);
    for (; s + 4 <= n; s += 4) {
      std::size_t rh[4];
      for (int j = 0; j < 4; ++j) rh[j] = row(rows[s + j]) * n_kv_heads + kv_head;
      V8 la = {}, lb = {}, lc = {}, ld = {};
      for (int i = 0; i < HS; i += 8) {
        V8 ka, kb, kc, kd;
        load8(ka, kl, rh[0], i);
        load8(kb, kl, rh[1], i);
        load8(kc, kl, rh[2], i);
        load8(kd, kl, rh[3], i);
        mul_add8(la, qv[i / 8], ka);
        mul_add8(lb, qv[i / 8], kb);
        mul_add8(lc, qv[i / 8], kc);
        mul_add8(ld, qv[i / 8], kd);
      }
      float dots[4];
      reduce4(dots, la, lb, lc, ld);
      for (int j = 0; j < 4; ++j) scores[s + j] = dots[j] * kl.scale(rh[j]) * scale;
    }
  }
  for (; s < n; ++s) {
    const std::size_t rh = row(rows[s]) * n_kv_heads + kv_head;
    // Eight independent partial sums: the compiler vectorises them without reassociating, and
    // the dot product is not one long chain of dependent additions (which would be slow on
    // long contexts). The order depends only on head_size, so batch invariance holds.
    float dot;
    if constexpr (HS > 0 && HS % 8 == 0) {
      // The same lanes as one vector: GCC does not always turn the unrolled lane loop of a
      // tiny head (8) into a vector multiply-add by itself.
      V8 lanes = {};
      for (int i = 0; i < HS; i += 8) {
        V8 qv1, kv;
        std::memcpy(&qv1, q + i, sizeof qv1);
        load8(kv, kl, rh, i);
        mul_add8(lanes, qv1, kv);
      }
      dot = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
            ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    } else {
      float lanes[8] = {};
      const int body = head_size - head_size % 8;
      for (int i = 0; i < body; i += 8)
        for (int l = 0; l < 8; ++l) lanes[l] += q[i + l] * kl.at(rh, i + l);
      dot = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
            ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
      for (int i = body; i < head_size; ++i) dot += q[i] * kl.at(rh, i);
    }
    // A per-row scale factors out of the dot product: sum(q * s * k8) = s * sum(q * k8).
    scores[s] = dot * kl.scale(rh) * scale;
  }
}

// Step 2, the softmax of scores[0 .. n), in place, then each turned into the weight of its
// value row: scores[s] = exp(score - max) / sum * the value row's scale. Separate passes, each
// a loop over positions in 16 lanes that the compiler turns into vector instructions (one chain
// of scalar max or add would cost a few cycles per position). The max is exact in any order;
// the sum's order depends only on n.
template <class VLoad, class Rows>
void softmax_weights(float* scores, const VLoad& vl, const Rows& rows, int kv_head, int n_kv_heads,
                     const RowMap& row) {
  const int n = rows.size();
  float lane_max[16], lane_sum[16] = {};
  for (int l = 0; l < 16; ++l) lane_max[l] = -INFINITY;
  const int body = n - n % 16;
  for (int s = 0; s < body; s += 16)
    for (int l = 0; l < 16; ++l)
      lane_max[l] = lane_max[l] < scores[s + l] ? scores[s + l] : lane_max[l];
  float max = -INFINITY;
  for (int l = 0; l < 16; ++l) max = std::max(max, lane_max[l]);
  for (int s = body; s < n; ++s) max = std::max(max, scores[s]);
  for (int s = 0; s < n; ++s) scores[s] = softmax_exp(scores[s] - max);
  for (int s = 0; s < body; s += 16)
    for (int l = 0; l < 16; ++l) lane_sum[l] += scores[s + l];
  float sum = 0.0f;
  for (int l = 0; l < 16; ++l) sum += lane_sum[l];
  for (int s = body; s < n; ++s) sum += scores[s];
  const float inv = 1.0f / sum;
  for (int s = 0; s < n; ++s)
    scores[s] = scores[s] * inv * vl.scale(row(rows[s]) * n_kv_heads + kv_head);
}

// Continues N <= 8 chains of the weighted sum over the positions of `rows`: acc[j] += w[s] *
// (elements c + 8j .. c + 8j + 7 of value row s), in increasing s. The chains run in
// named variables: GCC keeps an array of vector accumulators in registers but also stores it
// to the stack on every step (8 stores per position, more than the multiply-adds cost), which
// it does not do for plain variables.
template <int N, class VLoad, class Rows>
inline void accumulate_values(V8* acc, const float* w, const VLoad& vl, const Rows& rows, int c,
                              int kv_head, int n_kv_heads, const RowMap& row) {
  static_assert(N >= 1 && N <= 8, "at most 8 chains in registers");
  V8 r0 = acc[0], r1 = {}, r2 = {}, r3 = {}, r4 = {}, r5 = {}, r6 = {}, r7 = {};
  if constexpr (N > 1) r1 = acc[1];
  if constexpr (N > 2) r2 = acc[2];
  if constexpr (N > 3) r3 = acc[3];
  if constexpr (N > 4) r4 = acc[4];
  if constexpr (N > 5) r5 = acc[5];
  if constexpr (N > 6) r6 = acc[6];
  if constexpr (N > 7) r7 = acc[7];
  for (int s = 0; s < rows.size(); ++s) {
    const std::size_t rh = row(rows[s]) * n_kv_heads + kv_head;
    const float ws = w[s];
    const V8 a = {ws, ws, ws, ws, ws, ws, ws, ws};
    V8 v;
    load8(v, vl, rh, c);
    mul_add8(r0, a, v);
#define INFERLAB_CHAIN(J)        \
  if constexpr (N > J) {         \
    load8(v, vl, rh, c + 8 * J); \
    mul_add8(r##J, a, v);        \
  }
    INFERLAB_CHAIN(1)
    INFERLAB_CHAIN(2)
    INFERLAB_CHAIN(3)
    INFERLAB_CHAIN(4)
    INFERLAB_CHAIN(5)
    INFERLAB_CHAIN(6)
    INFERLAB_CHAIN(7)
#undef INFERLAB_CHAIN
  }
  acc[0] = r0;
  if constexpr (N > 1) acc[1] = r1;
  if constexpr (N > 2) acc[2] = r2;
  if constexpr (N > 3) acc[3] = r3;
  if constexpr (N > 4) acc[4] = r4;
  if constexpr (N > 5) acc[5] = r5;
  if constexpr (N > 6) acc[6] = r6;
  if constexpr (N > 7) acc[7] = r7;
}

// Step 3, the weighted sum of the value rows: out[i] = sum over s, in increasing s, of
// weights[s] * v_s[i], one chain per output element, from zero.
template <int HS, class VLoad, class Rows>
void weigh_values(float* out, const float* weights, const VLoad& vl, const Rows& rows, int kv_head,
                  int n_kv_heads, int head_size, const RowMap& row) {
  if constexpr (HS > 0) head_size = HS;
  const int n = rows.size();
  if constexpr (HS > 0 && HS % 8 == 0) {
    // The output row in registers for the whole walk over positions, 64 elements at a time.
    constexpr int kChains = HS / 8 <= 8 ? HS / 8 : 8;
    static_assert(HS / 8 % kChains == 0, "whole passes of kChains vectors");
    V8 acc[HS / 8] = {};
    for (int c = 0; c < HS; c += 8 * kChains)
      accumulate_values<kChains>(acc + c / 8, weights, vl, rows, c, kv_head, n_kv_heads, row);
    std::memcpy(out, acc, sizeof acc);
  } else {
    for (int i = 0; i < head_size; ++i) out[i] = 0.0f;
    for (int s = 0; s < n; ++s) {
      const std::size_t rh = row(rows[s]) * n_kv_heads + kv_head;
      const float a = weights[s];
      for (int i = 0; i < head_size; ++i) out[i] += a * vl.at(rh, i);
    }
  }
}

// One query head over the positions `rows` selects: scores, softmax, weighted sum of values.
// `scores` holds rows.size() floats.
template <int HS, class KLoad, class VLoad, class Rows>
void attend_rows(float* out, const float* q, const KLoad& kl, const VLoad& vl, const Rows& rows,
                 int kv_head, int n_kv_heads, int head_size, float* scores, const RowMap& row) {
  score_rows<HS>(scores, q, kl, rows, kv_head, n_kv_heads, head_size, row);
  softmax_weights(scores, vl, rows, kv_head, n_kv_heads, row);
  weigh_values<HS>(out, scores, vl, rows, kv_head, n_kv_heads, head_size, row);
}

// The causal case: position p attends to 0..p.
template <int HS, class KLoad, class VLoad>
void attend_row(float* out, const float* q, const KLoad& kl, const VLoad& vl, int p, int kv_head,
                int n_kv_heads, int head_size, float* scores, const RowMap& row = {}) {
  attend_rows<HS>(out, q, kl, vl, CausalRows{p + 1}, kv_head, n_kv_heads, head_size, scores, row);
}

// The scratch row of scores, one per thread and reused. It starts at 4096 positions and doubles
// when a longer context needs more, so decode allocates here only on its first step and at the
// few doublings past 4096 positions, never on an ordinary step.
inline float* scores_scratch(std::size_t n) {
  thread_local std::vector<float> scores;
  if (scores.size() < n) scores.resize(std::max<std::size_t>({n, 2 * scores.size(), 4096}));
  return scores.data();
}

// Causal queries of a float cache from this many on gather their KV heads' rows into one
// contiguous block first (see attend_all_hs). A gather reads each row once, as one query does.
constexpr int kGatherTokens = 8;

// The gathered rows, one buffer per calling thread, reused: one layer's keys and values up to
// the longest position (stories110M, 512 positions: 3 MB; a Llama-3-8B shape at 8K positions:
// 64 MB). It grows geometrically like scores_scratch, so a prefill allocates it a few times at
// most, and decode (one query per sequence) never needs it.
inline float* gather_scratch(std::size_t n) {
  thread_local std::vector<float> rows;
  if (rows.size() < n) rows.resize(std::max(n, 2 * rows.size()));
  return rows.data();
}

// All (token, head) pairs, in parallel when there is enough work to pay for waking threads.
// `rows_of(t)` gives token t's Rows (causal or listed); `longest` bounds their sizes.
template <int HS, class KLoad, class VLoad, class RowsOf>
void attend_all_hs(float* out, const float* q, const KLoad& kl, const VLoad& vl,
                   const RowsOf& rows_of, int longest, int T, int n_heads, int n_kv_heads,
                   int head_size, const RowMap& row) {
  const int q_dim = n_heads * head_size, group = n_heads / n_kv_heads;
  const int max_pos = longest - 1;
  const std::size_t stride = std::size_t(max_pos) + 1;
  // Where the loops find row s of KV head g: row(s) * kv_rows + g * head_rows of the loaders.
  // In the cache that is row(s) * n_kv_heads + g: the rows of one head are n_kv_heads * hs
  // floats apart (3 KB for stories110M), a stride at which the rows of one head fall into a
  // quarter of the L1 and L2 cache sets and evict each other. Many causal queries of a float
  // cache (a prefill) first gather each head's rows into one contiguous block, head by head
  // (the values copied, so no bit changes); then row s of head g is g * stride + s. In a
  // 512-token prefill of stories110M the gather makes attention ~20 % faster.
  KLoad kl_use = kl;
  VLoad vl_use = vl;
  RowMap row_use = row;
  int kv_rows = n_kv_heads;
  std::size_t head_rows = 1;
  float *gathered_k = nullptr, *gathered_v = nullptr;  // set when the rows are gathered
  constexpr bool kCanGather = HS > 0 && std::is_same_v<decltype(rows_of(0)), CausalRows> &&
                              std::is_same_v<KLoad, LoadF32> && std::is_same_v<VLoad, LoadF32>;
  if constexpr (kCanGather) {
    if (T >= kGatherTokens) {
      const std::size_t floats = std::size_t(n_kv_heads) * stride * HS;  // keys, or values
      gathered_k = gather_scratch(2 * floats);
      gathered_v = gathered_k + floats;
      kl_use = LoadF32{gathered_k, HS};
      vl_use = LoadF32{gathered_v, HS};
      row_use = RowMap{};
      kv_rows = 1;
      head_rows = stride;
    }
  }
  auto gather = [&](int g) {  // KV head g's rows 0 .. max_pos, keys then values
    if constexpr (kCanGather) {
      for (std::size_t s = 0; s < stride; ++s) {
        const std::size_t from = (row(int(s)) * n_kv_heads + g) * HS, to = (g * stride + s) * HS;
        std::memcpy(gathered_k + to, kl.d + from, HS * sizeof(float));
        std::memcpy(gathered_v + to, vl.d + from, HS * sizeof(float));
      }
    }
  };
  auto pair = [&](int t, int h, float* scores) {
    attend_rows<HS>(out + std::size_t(t) * q_dim + std::size_t(h) * head_size,
                    q + std::size_t(t) * q_dim + std::size_t(h) * head_size, kl_use, vl_use,
                    rows_of(t), int((h / group) * head_rows), kv_rows, head_size, scores, row_use);
  };
  // Head by head, then token by token: the tokens of one head read the same cached rows of its
  // KV head (a prefill of 512 positions: 2 x 128 KB), which then stay in L2 from one token to
  // the next (token by token, then head by head, would walk every head's rows for each token:
  // 2 x 1.5 MB per layer, from L3 each time). The order of the pairs changes no result.
  // Small work stays out of the OpenMP runtime altogether: even a region with if(false) costs
  // hundreds of nanoseconds, paid in every layer of every decode step.
  if (std::size_t(T) * n_heads * stride * head_size < (1u << 17)) {
    if (gathered_k != nullptr)
      for (int g = 0; g < n_kv_heads; ++g) gather(g);
    float* scores = scores_scratch(stride);
    for (int h = 0; h < n_heads; ++h)
      for (int t = 0; t < T; ++t) pair(t, h, scores);
    return;
  }
#pragma omp parallel
  {
    if (gathered_k != nullptr) {
#pragma omp for schedule(static)
      for (int g = 0; g < n_kv_heads; ++g) gather(g);
    }
    float* scores = scores_scratch(stride);
#pragma omp for schedule(dynamic, 4) collapse(2)
    for (int h = 0; h < n_heads; ++h)
      for (int t = 0; t < T; ++t) pair(t, h, scores);
  }
}

// Dispatches on the head size so that the common ones get the unrolled loops.
template <class KLoad, class VLoad, class RowsOf>
void attend_all_rows(float* out, const float* q, const KLoad& kl, const VLoad& vl,
                     const RowsOf& rows_of, int longest, int T, int n_heads, int n_kv_heads,
                     int head_size, const RowMap& row) {
#define INFERLAB_ATTEND(HS)                                                                    \
  attend_all_hs<HS>(out, q, kl, vl, rows_of, longest, T, n_heads, n_kv_heads, head_size, row); \
  break
  switch (head_size) {
    case 8:
      INFERLAB_ATTEND(8);
    case 16:
      INFERLAB_ATTEND(16);
    case 32:
      INFERLAB_ATTEND(32);
    case 48:
      INFERLAB_ATTEND(48);
    case 64:
      INFERLAB_ATTEND(64);
    case 128:
      INFERLAB_ATTEND(128);
    default:
      INFERLAB_ATTEND(0);
  }
#undef INFERLAB_ATTEND
}

// Causal attention for all (token, head) pairs: token t attends to positions 0..pos[t].
template <class KLoad, class VLoad>
void attend_all(float* out, const float* q, const KLoad& kl, const VLoad& vl, const int* pos, int T,
                int n_heads, int n_kv_heads, int head_size, const RowMap& row = {}) {
  int max_pos = 0;
  for (int t = 0; t < T; ++t) max_pos = std::max(max_pos, pos[t]);
  attend_all_rows(
      out, q, kl, vl, [pos](int t) { return CausalRows{pos[t] + 1}; }, max_pos + 1, T, n_heads,
      n_kv_heads, head_size, row);
}

// Listed attention for all (token, head) pairs: token t attends to rows[begin[t] .. begin[t+1]).
template <class KLoad, class VLoad>
void attend_all_listed(float* out, const float* q, const KLoad& kl, const VLoad& vl,
                       const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                       int head_size, const RowMap& row = {}) {
  int longest = 1;
  for (int t = 0; t < T; ++t) longest = std::max(longest, begin[t + 1] - begin[t]);
  attend_all_rows(
      out, q, kl, vl,
      [begin, rows](int t) {
        return ListedRows{rows + begin[t], begin[t + 1] - begin[t]};
      },
      longest, T, n_heads, n_kv_heads, head_size, row);
}

}  // namespace inferlab::kernels::detail
