// The linear layer y = x W^T: the reference and the CPU ladder (see matmul.hpp and
// kernels/README.md, "The CPU matmul ladder").
//
//   v1 lanes:   one weight row against up to 4 tokens at a time, each dot product in 16
//               independent lanes written as plain loops (the compiler vectorises them).
//   v2 blocked: a register-tiled micro-kernel (kRows weight rows x kTokens tokens, every
//               accumulator a 16-lane vector held in registers; on AVX2, where 16 lanes take
//               two registers, in two half-width passes), rows blocked for the L2 cache, token
//               panels for L1. Same 16-lane order as v1, written with intrinsics.
//   v3 packed:  weights repacked into panels of 16 rows stored column by column (PackedMatrix);
//               a vector holds 16 outputs, each one chain of multiply-adds over i (the
//               outer-product order of BLAS libraries), so a column of weights is loaded once
//               per kPackTokens tokens. Its own order: batch invariant, not v1's bits.
//
// Batch invariance is part of the definition. For v1 and v2: y[t, o] = reduce16(lane sums over
// i = l mod 16, each accumulated in increasing i) + (sequential sum of the n % 16 tail), where
// reduce16 is a fixed halving tree. Nothing in that order depends on T, on the position of the
// token in the batch, on the tile the output falls in, or on the thread count.
#include "inferlab/kernels/matmul.hpp"

#include <omp.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <new>
#include <string>
#include <vector>

#include "inferlab/kernels/error.hpp"
#include "inferlab/kernels/huge_pages.hpp"

namespace inferlab::kernels {

void matmul_ref(float* y, const float* x, const float* w, int T, int n, int d) {
  for (int t = 0; t < T; ++t) {
    for (int o = 0; o < d; ++o) {
      float sum = 0.0f;
      for (int i = 0; i < n; ++i) sum += x[std::size_t(t) * n + i] * w[std::size_t(o) * n + i];
      y[std::size_t(t) * d + o] = sum;
    }
  }
}

namespace {

// Below this many multiply-adds a parallel region costs more than it saves (waking threads
// takes microseconds); tiny models like stories260K then run on one thread.
constexpr long kParallelMacs = 1L << 17;

// ---------------------------------------------------------------------------------------------
// v1: lanes. Kept as the rung below the blocked kernel (and as the baseline of the benchmark).

// Lanes of independent partial sums. 16 floats = two AVX2 registers (or four NEON ones): the
// compiler vectorises the lane loop without reassociating anything, so the result is the same
// with and without vector units, and identical for a token alone or inside a batch.
constexpr int kLanes = 16;
// Tokens processed against one weight row at a time: the row is loaded once per group of
// kTokenBlock tokens, and their partial sums stay in registers.
constexpr int kTokenBlock = 4;
// Tokens per tile of x kept hot in cache while the weight rows stream past.
constexpr int kTokenTile = 32;

inline float reduce_lanes(const float* acc) {
  // Fixed pairwise order: part of the kernel's definition (batch invariance depends on it).
  float s[kLanes / 2];
  for (int l = 0; l < kLanes / 2; ++l) s[l] = acc[l] + acc[l + kLanes / 2];
  for (int l = 0; l < kLanes / 4; ++l) s[l] = s[l] + s[l + kLanes / 4];
  for (int l = 0; l < kLanes / 8; ++l) s[l] = s[l] + s[l + kLanes / 8];
  return s[0] + s[1];
}

// Dot products of one weight row with `nt` (<= kTokenBlock) token rows. The accumulators live
// in an array indexed by token: GCC keeps them on the stack (a load and a store around every
// multiply-add), which is what v2 fixes.
template <int NT>
inline void dot_rows(float* out, std::size_t out_stride, const float* w, const float* x, int n) {
  float acc[NT][kLanes] = {};
  const int body = n - n % kLanes;
  for (int i = 0; i < body; i += kLanes) {
    for (int t = 0; t < NT; ++t) {
      const float* xt = x + std::size_t(t) * n + i;
      for (int l = 0; l < kLanes; ++l) acc[t][l] += w[i + l] * xt[l];
    }
  }
  for (int t = 0; t < NT; ++t) {
    const float* xt = x + std::size_t(t) * n;
    float tail = 0.0f;
    for (int i = body; i < n; ++i) tail += w[i] * xt[i];
    out[std::size_t(t) * out_stride] = reduce_lanes(acc[t]) + tail;
  }
}

void matmul_lanes(float* y, const float* x, const float* w, int T, int n, int d) {
#pragma omp parallel if (long(T) * n * d >= kParallelMacs)
  {
    for (int t0 = 0; t0 < T; t0 += kTokenTile) {
      const int t1 = t0 + kTokenTile < T ? t0 + kTokenTile : T;
      // Static schedule over output rows: each thread streams its own slice of W.
#pragma omp for schedule(static) nowait
      for (int o = 0; o < d; ++o) {
        const float* wo = w + std::size_t(o) * n;
        int t = t0;
        for (; t + kTokenBlock <= t1; t += kTokenBlock)
          dot_rows<kTokenBlock>(y + std::size_t(t) * d + o, d, wo, x + std::size_t(t) * n, n);
        for (; t < t1; ++t)
          dot_rows<1>(y + std::size_t(t) * d + o, d, wo, x + std::size_t(t) * n, n);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// v2: blocked, register-tiled.
//
// Acc16 is 16 float lanes in whatever registers this CPU has: one zmm (AVX-512), two ymm
// (AVX/AVX2) or four xmm (SSE). Every build uses the same 16 lanes and the same reduction tree,
// so the order of the sums is the same on every CPU; only the rounding of a*b + c differs (one
// rounding with FMA hardware, two without), exactly as it does for v1.
#if defined(__AVX512F__)
struct Acc16 {
  __m512 v;
};
inline Acc16 zero16() { return {_mm512_setzero_ps()}; }
inline Acc16 load16(const float* p) { return {_mm512_loadu_ps(p)}; }
inline Acc16 broadcast16(float v) { return {_mm512_set1_ps(v)}; }
inline void store16(float* p, Acc16 a) { _mm512_storeu_ps(p, a.v); }
inline Acc16 mul_add16(Acc16 a, Acc16 b, Acc16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline __m256 halve16(Acc16 a) {  // s[l] = acc[l] + acc[l + 8]
  // __builtin_shufflevector rather than _mm512_extractf64x4_pd: GCC 12 warns inside the latter
  // (its undefined pass-through operand, gcc.gnu.org bug 105593).
  return _mm256_add_ps(__builtin_shufflevector(a.v, a.v, 0, 1, 2, 3, 4, 5, 6, 7),
                       __builtin_shufflevector(a.v, a.v, 8, 9, 10, 11, 12, 13, 14, 15));
}
// An empty asm that "may change" the register: the compiler must keep the loaded token vector
// in a register instead of folding a fresh load from memory into each of the kRows
// multiply-adds that use it (which would make the kernel load-bound).
inline void pin(Acc16& a) { asm("" : "+v"(a.v)); }
// Register budget (32 zmm): 4 x 6 accumulators + 4 weight vectors + 1 token vector.
constexpr int kRows = 4, kTokens = 6;
// Rung 3 (see packed_tile): 14 accumulators + 1 weight vector + 1 broadcast token.
constexpr int kPackTokens = 14;
#elif defined(__AVX__)
struct Acc16 {
  __m256 lo, hi;
};
inline Acc16 zero16() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline Acc16 load16(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline Acc16 broadcast16(float v) {
  const __m256 b = _mm256_set1_ps(v);
  return {b, b};
}
inline void store16(float* p, Acc16 a) {
  _mm256_storeu_ps(p, a.lo);
  _mm256_storeu_ps(p + 8, a.hi);
}
#if defined(__FMA__)
inline Acc16 mul_add16(Acc16 a, Acc16 b, Acc16 c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
#else
inline Acc16 mul_add16(Acc16 a, Acc16 b, Acc16 c) {
  return {_mm256_add_ps(_mm256_mul_ps(a.lo, b.lo), c.lo),
          _mm256_add_ps(_mm256_mul_ps(a.hi, b.hi), c.hi)};
}
#endif
inline __m256 halve16(Acc16 a) { return _mm256_add_ps(a.lo, a.hi); }
inline void pin(Acc16& a) { asm("" : "+x"(a.lo), "+x"(a.hi)); }  // see the AVX-512 version
// Register budget (16 ymm): a 16-lane accumulator takes two ymm registers, so a whole-width tile
// holds only 2 x 3 of them, and the weight and token vectors do not fit beside them (GCC
// spills). The tile below therefore runs in two half-width passes (see tile_halves): 3 x 4
// accumulators of one ymm each, 3 weight vectors and 1 token vector = 16 registers.
constexpr int kRows = 3, kTokens = 4;
// Rung 3 (see packed_tile): 6 accumulators of two ymm + 2 weight halves + 1 broadcast = 15.
constexpr int kPackTokens = 6;
#define INFERLAB_MATMUL_HALF_PASSES 1
#elif defined(__SSE2__)  // part of every x86-64 CPU
struct Acc16 {
  __m128 a, b, c, d;  // lanes 0-3, 4-7, 8-11, 12-15
};
inline Acc16 zero16() {
  return {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
}
inline Acc16 load16(const float* p) {
  return {_mm_loadu_ps(p), _mm_loadu_ps(p + 4), _mm_loadu_ps(p + 8), _mm_loadu_ps(p + 12)};
}
inline Acc16 broadcast16(float v) {
  const __m128 b = _mm_set1_ps(v);
  return {b, b, b, b};
}
inline void store16(float* p, Acc16 v) {
  _mm_storeu_ps(p, v.a);
  _mm_storeu_ps(p + 4, v.b);
  _mm_storeu_ps(p + 8, v.c);
  _mm_storeu_ps(p + 12, v.d);
}
inline Acc16 mul_add16(Acc16 x, Acc16 y, Acc16 z) {
  return {_mm_add_ps(_mm_mul_ps(x.a, y.a), z.a), _mm_add_ps(_mm_mul_ps(x.b, y.b), z.b),
          _mm_add_ps(_mm_mul_ps(x.c, y.c), z.c), _mm_add_ps(_mm_mul_ps(x.d, y.d), z.d)};
}
inline void pin(Acc16& v) { asm("" : "+x"(v.a), "+x"(v.b), "+x"(v.c), "+x"(v.d)); }
// Register budget (16 xmm): 1 x 2 accumulators of four registers each + weights + one token.
constexpr int kRows = 1, kTokens = 2;
// Rung 3 (see packed_tile): 2 accumulators of four xmm + 4 weight quarters + 1 broadcast = 13.
constexpr int kPackTokens = 2;
#else  // not x86 (e.g. ARM): plain lanes, which the compiler maps to its own vector registers
struct Acc16 {
  float v[16];
};
inline Acc16 zero16() { return {}; }
inline Acc16 load16(const float* p) {
  Acc16 a;
  for (int l = 0; l < 16; ++l) a.v[l] = p[l];
  return a;
}
inline Acc16 broadcast16(float v) {
  Acc16 a;
  for (int l = 0; l < 16; ++l) a.v[l] = v;
  return a;
}
inline void store16(float* p, Acc16 a) {
  for (int l = 0; l < 16; ++l) p[l] = a.v[l];
}
inline Acc16 mul_add16(Acc16 a, Acc16 b, Acc16 c) {
  for (int l = 0; l < 16; ++l) c.v[l] += a.v[l] * b.v[l];  // written as v1 writes it
  return c;
}
inline void pin(Acc16&) {}
constexpr int kRows = 2, kTokens = 2;
constexpr int kPackTokens = 4;
#endif

#if defined(__AVX__)
// The halving tree of reduce_lanes: +8 (halve16), +4, +2, +1.
inline float reduce16(Acc16 a) {
  const __m256 s8 = halve16(a);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}
#elif defined(__SSE2__)
inline float reduce16(Acc16 v) {
  const __m128 s4 = _mm_add_ps(_mm_add_ps(v.a, v.c), _mm_add_ps(v.b, v.d));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}
#else
inline float reduce16(Acc16 a) { return reduce_lanes(a.v); }
#endif

// The n % 16 leftover products, in order: the same expression as v1's tail, so the compiler
// treats it the same way (whether it fuses the multiply-add is its choice, the same in both).
inline float tail_dot(const float* w, const float* x, int from, int n) {
  float tail = 0.0f;
  for (int i = from; i < n; ++i) tail += w[i] * x[i];
  return tail;
}

// Asks for the cache line at column i of each of the next group's R rows (the R * n floats after
// this group's, contiguous with them): see `stream` in tile().
template <int R>
inline void prefetch_next_group(const float* w, int n, int i) {
  const float* ahead = w + std::size_t(R) * n;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) __builtin_prefetch(ahead + std::size_t(r) * n + i);
}

// The micro-kernel: R weight rows x N tokens, the whole of K, R * N accumulators in registers.
// Per 16-wide step it loads R + N vectors and issues R * N multiply-adds. Every instantiation
// performs, for each output, the same operations in the same order: which tile an output lands
// in (and so T and the batch) cannot change its bits.
template <int R, int N>
inline void tile(float* y, std::size_t ldy, const float* w, const float* x, int n, bool stream) {
  Acc16 acc[R][N];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) acc[r][t] = zero16();
  const int body = n - n % 16;
  // `stream`: W comes from memory (the first token panel to meet a row block). R interleaved
  // rows defeat the hardware prefetcher, so ask for the next group's rows (the next R * n
  // floats, contiguous with these) one group ahead; measured 1.4x faster at 4 tokens. Later
  // panels find the block in L2, where the hint would only cost issue slots.
  for (int i = 0; i < body; i += 16) {
    if (stream) prefetch_next_group<R>(w, n, i);
    Acc16 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load16(w + std::size_t(r) * n + i);
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) {
      Acc16 xv = load16(x + std::size_t(t) * n + i);
      if constexpr (R > 1) pin(xv);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = mul_add16(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < N; ++t)
      y[std::size_t(t) * ldy + r] =
          reduce16(acc[r][t]) + tail_dot(w + std::size_t(r) * n, x + std::size_t(t) * n, body, n);
}

#if defined(INFERLAB_MATMUL_HALF_PASSES)
#if defined(__FMA__)
inline __m256 mul_add8(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
#else
inline __m256 mul_add8(__m256 a, __m256 b, __m256 c) {
  return _mm256_add_ps(_mm256_mul_ps(a, b), c);
}
#endif

// One half of the 16 lanes (lanes 0-7 when `half` = 0, lanes 8-15 when 1) of an R x N tile,
// over the columns [from, to) (multiples of 16): lane l of the half adds the products at
// i = 16 k + 8 half + l in increasing i, exactly the products, and the order, of the same lane
// in the whole-width kernel. The accumulators live in registers for the whole loop.
template <int R, int N>
inline void half_pass(__m256 (&acc)[R][N], const float* w, const float* x, int n, int from, int to,
                      int half, bool stream) {
  __m256 a[R][N];  // a local copy, so the compiler keeps it in registers
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) a[r][t] = acc[r][t];
  for (int i = from + 8 * half; i < to; i += 16) {
    if (stream && half == 0) prefetch_next_group<R>(w, n, i);  // see tile()
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      wv[r] = _mm256_loadu_ps(w + std::size_t(r) * n + i);
      asm("" : "+x"(wv[r]));  // pinned too: loaded once, used N times
    }
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) {
      __m256 xv = _mm256_loadu_ps(x + std::size_t(t) * n + i);
      if constexpr (R > 1) asm("" : "+x"(xv));  // pinned, as in pin()
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) a[r][t] = mul_add8(wv[r], xv, a[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) acc[r][t] = a[r][t];
}

// Columns per chunk of the half-width passes: R + N rows of a chunk (7 x 2 KB) stay in L1
// between the two passes over it.
constexpr int kHalfChunk = 512;

// The AVX2 micro-kernel: the whole-width tile's sums, computed half a vector at a time. Chunk
// by chunk of the columns, one pass accumulates lanes 0-7 and a second pass lanes 8-15 over
// the same rows (now in L1); between chunks the 2 R N accumulators wait on the stack (a load
// and a store each per chunk, against 16 R N multiply-adds per pass). Adding the halves at the
// end is the first step of the halving tree (halve16), so the bits are the whole-width
// kernel's, and v1's.
template <int R, int N>
inline void tile_halves(float* y, std::size_t ldy, const float* w, const float* x, int n,
                        bool stream) {
  const int body = n - n % 16;
  __m256 lo[R][N], hi[R][N];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < N; ++t) lo[r][t] = hi[r][t] = _mm256_setzero_ps();
  for (int c = 0; c < body; c += kHalfChunk) {
    const int end = std::min(body, c + kHalfChunk);
    half_pass<R, N>(lo, w, x, n, c, end, 0, stream);
    half_pass<R, N>(hi, w, x, n, c, end, 1, stream);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < N; ++t) {
      y[std::size_t(t) * ldy + r] =
          reduce16(Acc16{lo[r][t], hi[r][t]}) +  // the whole-width tree: lo + hi first
          tail_dot(w + std::size_t(r) * n, x + std::size_t(t) * n, body, n);
    }
}
#endif

// The tile this CPU runs: the half-width passes where a whole-width tile would not fit the
// registers (AVX2), the whole-width kernel everywhere else (and for a lone 1 x 1 edge tile).
template <int R, int N>
inline void micro_tile(float* y, std::size_t ldy, const float* w, const float* x, int n,
                       bool stream) {
#if defined(INFERLAB_MATMUL_HALF_PASSES)
  if constexpr (R * N > 1) {
    tile_halves<R, N>(y, ldy, w, x, n, stream);
    return;
  }
#endif
  tile<R, N>(y, ldy, w, x, n, stream);
}

// Picks the instantiation for a partial tile (the edges of y): R rows fixed, nt <= kTokens.
template <int R>
inline void tile_tokens(int nt, float* y, std::size_t ldy, const float* w, const float* x, int n,
                        bool stream) {
  static_assert(kTokens <= 6, "extend the switch below");
  switch (nt) {
    case 1:
      micro_tile<R, 1>(y, ldy, w, x, n, stream);
      break;
    case 2:
      if constexpr (kTokens >= 2) micro_tile<R, 2>(y, ldy, w, x, n, stream);
      break;
    case 3:
      if constexpr (kTokens >= 3) micro_tile<R, 3>(y, ldy, w, x, n, stream);
      break;
    case 4:
      if constexpr (kTokens >= 4) micro_tile<R, 4>(y, ldy, w, x, n, stream);
      break;
    case 5:
      if constexpr (kTokens >= 5) micro_tile<R, 5>(y, ldy, w, x, n, stream);
      break;
    case 6:
      if constexpr (kTokens >= 6) micro_tile<R, 6>(y, ldy, w, x, n, stream);
      break;
    default:
      break;
  }
}

inline void tile_any(int nr, int nt, float* y, std::size_t ldy, const float* w, const float* x,
                     int n, bool stream) {
  static_assert(kRows <= 4, "extend the switch below");
  switch (nr) {
    case 1:
      tile_tokens<1>(nt, y, ldy, w, x, n, stream);
      break;
    case 2:
      if constexpr (kRows >= 2) tile_tokens<2>(nt, y, ldy, w, x, n, stream);
      break;
    case 3:
      if constexpr (kRows >= 3) tile_tokens<3>(nt, y, ldy, w, x, n, stream);
      break;
    case 4:
      if constexpr (kRows >= 4) tile_tokens<4>(nt, y, ldy, w, x, n, stream);
      break;
    default:
      break;
  }
}

// Bytes of weights one row block may hold: the block stays in the L2 cache while every token
// panel passes over it, so each weight comes from memory once per call, not once per panel.
constexpr std::size_t kRowBlockBytes = std::size_t{192} << 10;
// Bytes of x one token block may hold (see matmul_blocked_slice).
constexpr std::size_t kTokenBlockBytes = std::size_t{256} << 10;

// The rows of thread `id` of `threads`: each owns a contiguous slice of the rows (of W and of
// the columns of y), so in decode every core streams its own part of the weights, and no two
// threads write one cache line of y except at the slice boundaries.
void matmul_blocked_slice(float* y, const float* x, const float* w, int T, int n, int d, int id,
                          int threads) {
  const int groups = (d + kRows - 1) / kRows;  // groups of kRows weight rows
  const int groups_per_block =
      int(std::max<std::size_t>(1, kRowBlockBytes / (std::size_t(n) * sizeof(float) * kRows)));
  const int g_begin = int(long(groups) * id / threads),
            g_end = int(long(groups) * (id + 1) / threads);
  if (T == 1) {
    // Decode: one row at a time is one contiguous stream through W, which the hardware
    // prefetcher follows best (interleaving rows measured slower: 14 against 24 GB/s).
    const int o_end = std::min(d, g_end * kRows);
    for (int o = g_begin * kRows; o < o_end; ++o)
      tile<1, 1>(y + o, d, w + std::size_t(o) * n, x, n, /*stream=*/false);
    return;
  }
  // Tokens per block: their rows of x stay in L2 next to a row block of W. Without this a long
  // prompt's x (512 tokens x 768 floats = 1.5 MB) streams through L2, every panel comes from
  // L3, and 512 tokens ran at half the speed of 64.
  const int tokens_per_block = std::max(
      kTokens, int(kTokenBlockBytes / (std::size_t(n) * sizeof(float))) / kTokens * kTokens);
  for (int tb = 0; tb < T; tb += tokens_per_block) {
    const int te = std::min(T, tb + tokens_per_block);
    for (int b0 = g_begin; b0 < g_end; b0 += groups_per_block) {
      const int b1 = std::min(b0 + groups_per_block, g_end);
      // The row block (in L2) meets every token panel (kTokens rows of x, in L1) in turn.
      for (int t0 = tb; t0 < te; t0 += kTokens) {
        const int nt = std::min(kTokens, te - t0);
        for (int g = b0; g < b1; ++g) {
          const int o = g * kRows;
          tile_any(std::min(kRows, d - o), nt, y + std::size_t(t0) * d + o, d,
                   w + std::size_t(o) * n, x + std::size_t(t0) * n, n, /*stream=*/t0 == tb);
        }
      }
    }
  }
}

void matmul_blocked(float* y, const float* x, const float* w, int T, int n, int d) {
  // Below the threshold the OpenMP runtime is not entered at all: even a region with
  // if(false) costs a few hundred nanoseconds, and a stories260K token runs dozens of them.
  if (long(T) * n * d < kParallelMacs) {
    matmul_blocked_slice(y, x, w, T, n, d, 0, 1);
    return;
  }
#pragma omp parallel
  matmul_blocked_slice(y, x, w, T, n, d, omp_get_thread_num(), omp_get_num_threads());
}

// ---------------------------------------------------------------------------------------------
// v3: packed weights, outer products (the order BLAS libraries use).
//
// v1 and v2 compute dot products: every multiply-add needs a fresh vector of the weights *and*
// of the tokens, so a 3 x 4 tile on AVX2 pulls 96 bytes of weights per 12 multiply-adds out of
// L2 and stalls near 45 % of the FMA peak. Here a vector holds one column of 16 weight rows
// (one panel of PackedMatrix, contiguous) and is multiplied by one token value, broadcast:
// the 16 lanes are 16 *outputs*, and each output is one chain of multiply-adds over i in
// increasing order, y[t, o] = fma(w[o, n-1], x[t, n-1], ... fma(w[o, 0], x[t, 0], 0)).
// A 16 x kPackTokens tile loads one weight vector and kPackTokens broadcasts per column;
// the weight panel's 16 x kPackDepth block stays in L1 while every token of a block passes.
//
// The order depends only on i, never on T, on the tile or on the thread, so v3 is batch
// invariant too; it is a different order from v1/v2's, so its bits differ from theirs.

// Columns per step of the tile: 16 rows x 512 columns = 32 KB of weights, the size of a Zen 3
// L1. Measured 3-8 % faster than 256 columns (16 KB) on each shape tried (16, 64 and 512
// tokens, 768 -> 2048 and 2048 -> 768, weights streamed from memory, alternated runs): half
// the round trips of the partial sums through y, and the block's lines come from L2 in order,
// which the hardware prefetcher follows.
constexpr int kPackDepth = 512;
// Columns of x packed at a time, and the bytes a packed block of tokens may take (in L2).
// 1024 columns measured faster than 512 for the same reasons.
constexpr int kPackChunk = 1024;
constexpr std::size_t kPackTokenBlockBytes = std::size_t{256} << 10;
// How many panels ahead a block of weights is requested from memory (see matmul_packed_slice).
constexpr int kPrefetchPanels = 2;

// NT tokens against one panel, over `len` columns starting where `panel` and `x` point. The
// tokens come packed: column i of token t is x[i * kPackTokens + t] (see pack_tokens), one
// contiguous stream of broadcasts. `first`: start the chains from zero; otherwise continue the
// partial sums stored in c (the same float values the registers held, so splitting i into
// steps changes no bit).
// `ahead`, when not null, is the same block of the next panel: one cache line of it (a column)
// is requested per column here, so it arrives from memory while this tile computes.
template <int NT>
inline void packed_tile(float* c, std::size_t ldc, const float* panel, const float* x, int len,
                        bool first, const float* ahead) {
  Acc16 acc[NT];
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) acc[t] = first ? zero16() : load16(c + std::size_t(t) * ldc);
  for (int i = 0; i < len; ++i) {
    if (ahead) __builtin_prefetch(ahead + std::size_t(i) * PackedMatrix::kPanelRows);
    const Acc16 wv = load16(panel + std::size_t(i) * PackedMatrix::kPanelRows);
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t)
      acc[t] = mul_add16(wv, broadcast16(x[std::size_t(i) * kPackTokens + t]), acc[t]);
  }
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) store16(c + std::size_t(t) * ldc, acc[t]);
}

// The instantiation for nt <= kPackTokens tokens (the last token group may be partial).
template <int NT = kPackTokens>
inline void packed_tile_any(int nt, float* c, std::size_t ldc, const float* panel, const float* x,
                            int len, bool first, const float* ahead) {
  if (nt == NT) {
    packed_tile<NT>(c, ldc, panel, x, len, first, ahead);
  } else if constexpr (NT > 1) {
    packed_tile_any<NT - 1>(nt, c, ldc, panel, x, len, first, ahead);
  }
}

// Copies columns [k0, k1) of tokens [t0, t1) of x (rows of n) into groups of kPackTokens
// tokens, each group stored column by column: group g, column k0 + i, token t at
// out[(g * (k1 - k0) + i) * kPackTokens + t]. A partial last group leaves its unused slots
// alone (no tile reads them).
inline void pack_tokens(float* out, const float* x, int n, int t0, int t1, int k0, int k1) {
  const int width = k1 - k0;
  for (int g0 = t0; g0 < t1; g0 += kPackTokens) {
    float* group = out + std::size_t(g0 - t0) * width;
    const int nt = std::min(kPackTokens, t1 - g0);
    for (int t = 0; t < nt; ++t) {
      const float* row = x + std::size_t(g0 + t) * n + k0;
      for (int i = 0; i < width; ++i) group[std::size_t(i) * kPackTokens + t] = row[i];
    }
  }
}

// Decode (one token): a matrix-vector product, bound by the weight stream. NP panels at a time
// give the core several independent chains (each multiply-add waits for the previous one of its
// chain, 4 cycles); the columns of a panel are contiguous, one stream per panel. Same chains,
// same order as packed_tile<1>.
template <int NP>
inline void packed_gemv(float* const (&y)[NP], const float* const (&p)[NP], const float* x, int n) {
  Acc16 a[NP];
  for (int j = 0; j < NP; ++j) a[j] = zero16();
  for (int i = 0; i < n; ++i) {
    const Acc16 xv = broadcast16(x[i]);
    for (int j = 0; j < NP; ++j)
      a[j] = mul_add16(load16(p[j] + std::size_t(i) * PackedMatrix::kPanelRows), xv, a[j]);
  }
  for (int j = 0; j < NP; ++j) store16(y[j], a[j]);
}

// The panels [p_begin, p_end) of thread `id`: each thread owns its own slice of the weights.
void matmul_packed_slice(float* y, const float* x, const PackedMatrix& w, int T, int id,
                         int threads) {
  constexpr int R = PackedMatrix::kPanelRows;
  const int n = w.n(), d = w.d(), panels = w.panels();
  const int p_begin = int(long(panels) * id / threads),
            p_end = int(long(panels) * (id + 1) / threads);
  // A panel past the last full one holds d % 16 real rows (the rest are zeros): its outputs
  // go through scratch space, so y is never written past row d - 1.
  const int full_panels = d / R;
  if (T == 1) {
    float scratch[R];
    int p = p_begin;
    for (; p + 2 <= std::min(p_end, full_panels); p += 2)
      packed_gemv<2>({y + std::size_t(p) * R, y + std::size_t(p + 1) * R},
                     {w.panel(p), w.panel(p + 1)}, x, n);
    for (; p < p_end; ++p) {
      packed_gemv<1>({scratch}, {w.panel(p)}, x, n);
      std::copy_n(scratch, std::min(R, d - p * R), y + std::size_t(p) * R);
    }
    return;
  }
  // Blocking, as in BLAS libraries: a block of tokens and a chunk of kPackChunk columns of x
  // are packed (in L2) while every panel of this thread passes over them, each panel a
  // kPackDepth-column block at a time (in L1). Chunking the columns keeps a block of tokens
  // large whatever n is (60 tokens of 1024 columns in 256 KB), so W is read from memory once
  // per 60 tokens or more; blocks of whole rows held only 16 tokens of a 4096-wide layer. The
  // partial sums wait in y (and in `edge` for the partial panel) from one chunk to the next.
  // Both buffers are this thread's own and kept between calls: once a call of a given size has
  // run, the next one allocates nothing.
  const int chunk = std::min(n, kPackChunk);
  const int max_block =
      std::max(kPackTokens, int(kPackTokenBlockBytes / (std::size_t(chunk) * sizeof(float))) /
                                kPackTokens * kPackTokens);
  // Blocks of equal size (whole token groups), not full ones and a remainder: 512 tokens of a
  // 768-wide layer go as 6 x 78 + 44, not 6 x 84 + 8, whose last block would stream every
  // weight for 8 tokens.
  const int blocks = (T + max_block - 1) / max_block;
  const int tokens_per_block =
      ((T + blocks - 1) / blocks + kPackTokens - 1) / kPackTokens * kPackTokens;
  const int block = std::min(T, tokens_per_block);
  const std::size_t block_slots =
      std::size_t((block + kPackTokens - 1) / kPackTokens) * kPackTokens;
  thread_local std::vector<float> xp, edge;
  if (xp.size() < block_slots * chunk) xp.resize(block_slots * chunk);
  const bool has_edge = p_end > full_panels;
  if (has_edge && edge.size() < block_slots * R) edge.resize(block_slots * R);
  for (int tb = 0; tb < T; tb += tokens_per_block) {
    const int te = std::min(T, tb + tokens_per_block);
    for (int k0 = 0; k0 < n; k0 += chunk) {
      const int k1 = std::min(n, k0 + chunk);
      pack_tokens(xp.data(), x, n, tb, te, k0, k1);
      for (int p = p_begin; p < p_end; ++p) {
        const float* panel = w.panel(p);
        const bool full = p < full_panels;
        for (int i0 = k0; i0 < k1; i0 += kPackDepth) {
          const int len = std::min(kPackDepth, k1 - i0);
          for (int t0 = tb; t0 < te; t0 += kPackTokens) {
            float* c = full ? y + std::size_t(t0) * d + std::size_t(p) * R
                            : edge.data() + std::size_t(t0 - tb) * R;
            const float* xg =
                xp.data() + std::size_t(t0 - tb) * (k1 - k0) + std::size_t(i0 - k0) * kPackTokens;
            // The first token group streams this block from memory: it asks for the same block
            // of the panel kPrefetchPanels ahead as it goes (panels are n * 16 floats apart, a
            // jump the hardware prefetcher does not foresee). Two panels ahead rather than one
            // gives the lines the time of a whole panel more to arrive: a batch of 16 tokens
            // computes a block in about the time memory takes to deliver one.
            const float* ahead = t0 == tb && p + kPrefetchPanels < p_end
                                     ? w.panel(p + kPrefetchPanels) + std::size_t(i0) * R
                                     : nullptr;
            packed_tile_any(std::min(kPackTokens, te - t0), c, full ? std::size_t(d) : R,
                            panel + std::size_t(i0) * R, xg, len, i0 == 0, ahead);
          }
        }
      }
    }
    if (has_edge) {  // the partial panel's real rows, out of `edge`
      const int p = p_end - 1;
      for (int t = tb; t < te; ++t)
        std::copy_n(edge.data() + std::size_t(t - tb) * R, d - p * R,
                    y + std::size_t(t) * d + std::size_t(p) * R);
    }
  }
}

}  // namespace

PackedMatrix::PackedMatrix(const float* w, int n, int d) : n_(n), d_(d) {
  if (w == nullptr || n < 1 || d < 1) {
    throw Error("PackedMatrix: need a weight matrix with n >= 1 and d >= 1 (got n " +
                std::to_string(n) + ", d " + std::to_string(d) + ")");
  }
  panels_ = (d + kPanelRows - 1) / kPanelRows;
  const std::size_t floats = std::size_t(panels_) * kPanelRows * std::size_t(n);
  // 64-byte aligned: a panel's column of 16 floats is then one cache line. A matrix of 2 MiB
  // or more starts on a huge page and asks for huge pages (huge_pages.hpp): decode streams it.
  const std::size_t align = floats * sizeof(float) >= kHugePageBytes ? kHugePageBytes : 64;
  data_ = std::unique_ptr<float[], detail::AlignedDelete>(
      new (std::align_val_t{align}) float[floats], detail::AlignedDelete{align});
  advise_huge_pages(data_.get(), floats * sizeof(float));
  // Panel p, column i, lane r = w[16 p + r, i]; the rows past d are zeros.
#pragma omp parallel for schedule(static) if (floats >= std::size_t{1} << 20)
  for (int p = 0; p < panels_; ++p) {
    float* out = data_.get() + std::size_t(p) * kPanelRows * n;
    for (int r = 0; r < kPanelRows; ++r) {
      const int o = p * kPanelRows + r;
      for (int i = 0; i < n; ++i)
        out[std::size_t(i) * kPanelRows + r] = o < d ? w[std::size_t(o) * n + i] : 0.0f;
    }
  }
}

void detail::AlignedDelete::operator()(float* p) const {
  ::operator delete[](p, std::align_val_t{align});
}

void matmul_packed(float* y, const float* x, const PackedMatrix& w, int T) {
  if (w.panels() == 0) throw Error("matmul_packed: empty PackedMatrix");
  if (long(T) * w.n() * w.d() < kParallelMacs) {  // see matmul_blocked
    matmul_packed_slice(y, x, w, T, 0, 1);
    return;
  }
#pragma omp parallel
  matmul_packed_slice(y, x, w, T, omp_get_thread_num(), omp_get_num_threads());
}

int matmul_cpu_versions() { return 3; }

void matmul_cpu_version(int version, float* y, const float* x, const float* w, int T, int n,
                        int d) {
  switch (version) {
    case 1:
      matmul_lanes(y, x, w, T, n, d);
      return;
    case 2:
      matmul_blocked(y, x, w, T, n, d);
      return;
    case 3:  // packs w on every call; the forward pass packs its weights once (Model)
      matmul_packed(y, x, PackedMatrix(w, n, d), T);
      return;
    default:
      throw Error("matmul_cpu_version: version " + std::to_string(version) + " outside 1.." +
                  std::to_string(matmul_cpu_versions()));
  }
}

void matmul_cpu(float* y, const float* x, const float* w, int T, int n, int d) {
  matmul_cpu_version(kMatmulCpuBestVersion, y, x, w, T, n, d);
}

}  // namespace inferlab::kernels
