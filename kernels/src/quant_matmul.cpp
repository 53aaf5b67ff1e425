// The linear layer on stored (block-format) weights: the matrix type, rung 1 (the reference),
// and the drivers of rungs 2 and 3 with their scalar row dots (SIMD ones: quant_dot_x86.cpp);
// F16 and BF16 weights take float activations on rungs 2 and 3, the others quantized ones.
#include "inferlab/kernels/quant_matmul.hpp"

#include <cpuid.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "inferlab/kernels/error.hpp"
#include "quant_dot.hpp"

namespace inferlab::kernels {

namespace {

constexpr std::size_t kAlign = 64;

// Below about this many multiply-adds a call runs on one thread: waking the team costs more.
constexpr long kParallelWork = 1L << 17;

// Tokens of rungs 2 and 3 whose activations one pass over the weight rows serves.
constexpr int kChunk = 64;

}  // namespace

QuantMatrix QuantMatrix::allocate(TensorType type, int n, int d) {
  if (n < 1 || d < 1) {
    throw Error("QuantMatrix: a " + std::to_string(d) + " x " + std::to_string(n) +
                " matrix has no rows to store");
  }
  const std::size_t block = block_elements(type);
  if (std::size_t(n) % block != 0) {
    throw Error("QuantMatrix: rows of " + std::to_string(n) + " numbers are not a whole number "
                "of " + ggml_type_name(std::uint32_t(type)) + "'s " + std::to_string(block) +
                "-number blocks");
  }
  QuantMatrix m;
  m.type_ = type;
  m.n_ = n;
  m.d_ = d;
  m.row_bytes_ = tensor_bytes(type, std::size_t(n));
  auto* p = static_cast<std::uint8_t*>(
      ::operator new[](m.bytes(), std::align_val_t(kAlign)));
  m.data_ = std::shared_ptr<std::uint8_t[]>(
      p, [](std::uint8_t* q) { ::operator delete[](q, std::align_val_t(kAlign)); });
  return m;
}

QuantMatrix QuantMatrix::quantize(TensorType type, const float* w, int n, int d) {
  QuantMatrix m = allocate(type, n, d);
  std::uint8_t* out = m.data_.get();
  const long rows = d;
#pragma omp parallel for schedule(static) if (long(n) * d >= kParallelWork)
  for (long o = 0; o < rows; ++o)
    quantize_ref(type, w + o * n, out + std::size_t(o) * m.row_bytes_, std::size_t(n));
  return m;
}

QuantMatrix QuantMatrix::copy_rows(TensorType type, const void* rows, int n, int d) {
  QuantMatrix m = allocate(type, n, d);
  std::memcpy(m.data_.get(), rows, m.bytes());
  return m;
}

void QuantMatrix::dequantize_row(int o, float* dst) const {
  dequantize_ref(type_, row(o), dst, std::size_t(n_));
}

void matmul_quant_ref(float* y, const float* x, const QuantMatrix& w, int T) {
  if (w.empty()) throw Error("matmul_quant_ref: the weight matrix is empty");
  if (T < 1) throw Error("matmul_quant_ref: T = " + std::to_string(T) + " (must be >= 1)");
  const int n = w.n(), d = w.d();
#pragma omp parallel if (long(T) * n * d >= kParallelWork)
  {
    std::vector<float> row(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (int o = 0; o < d; ++o) {
      w.dequantize_row(o, row.data());
      for (int t = 0; t < T; ++t) {
        const float* xt = x + std::size_t(t) * n;
        float acc = 0.0f;
        for (int i = 0; i < n; ++i) acc += row[std::size_t(i)] * xt[i];
        y[std::size_t(t) * d + std::size_t(o)] = acc;
      }
    }
  }
}

namespace quant_dot {

int weight_offset(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return 128;
    case TensorType::kQ4_0:
      return 8;
    case TensorType::kQ5_0:
      return 16;
    default:
      return 0;
  }
}

namespace {

// n activations (n <= kSuper) to q[j] = x[j] / d rounded to nearest (ties to even), d =
// amax / 127 (0 for an all-zero run, whose q are then all 0); returns d.
float quantize_run(const float* x, int n, std::int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = std::int8_t(std::nearbyint(x[j] * id));
  return d;
}

int sum_of(const std::int8_t* q, int n) {
  int sum = 0;
  for (int j = 0; j < n; ++j) sum += q[j];
  return sum;
}

}  // namespace

void quantize_activations(const float* x, int n, int offset, ActBlock* out) {
  for (int b = 0; b < n / kBlock; ++b, x += kBlock) {
    const float d = quantize_run(x, kBlock, out[b].q);
    for (int l = 0; l < 8; ++l) out[b].bias[l] = -offset * sum_of(out[b].q + 4 * l, 4);
    out[b].d = d;
    out[b].s = d * float(sum_of(out[b].q, kBlock));
  }
}

void quantize_activations(const float* x, int n, ActSuper* out) {
  for (int b = 0; b < n / kSuper; ++b, x += kSuper) {
    out[b].d = quantize_run(x, kSuper, out[b].q);
    for (int k = 0; k < kSuper / kBlock; ++k)
      out[b].sums[k] = std::int16_t(sum_of(out[b].q + kBlock * k, kBlock));
  }
}

namespace {

// One of a row dot's three paths: Fn of type on isa.
template <class Fn>
Fn on_isa(QuantIsa isa, TensorType type, Fn (*scalar)(TensorType), Fn (*avx2)(TensorType),
          Fn (*avx512_vnni)(TensorType)) {
  switch (isa) {
    case QuantIsa::avx2:
      return avx2(type);
    case QuantIsa::avx512_vnni:
      return avx512_vnni(type);
    case QuantIsa::scalar:
      break;
  }
  return scalar(type);
}

// Two sets of 8 float lanes added in quant_dot.hpp's order: v[l] = acc[0][l] + acc[1][l], then
// ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
float sum_lanes(const float (&acc)[2][8]) {
  float v[8];
  for (int l = 0; l < 8; ++l) v[l] = acc[0][l] + acc[1][l];
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

// The scalar path: the lanes and the two sets of quant_dot.hpp as loops, one row and token at
// a time.
// Block(p, w, d, m) gives a block's weights as ints, its scale d and minimum m (0 when none).
template <void (*Block)(const std::uint8_t*, int*, float&, float&), std::size_t kBytes>
void row_dot_scalar_any(const std::uint8_t* rows_start, std::size_t row_bytes, int rows,
                        const ActBlock* act, int nb, int count, float* out) {
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* row = rows_start + std::size_t(r) * row_bytes;
    for (int c = 0; c < count; ++c) {
      const ActBlock* a = act + std::size_t(c) * std::size_t(nb);
      float acc[2][8] = {}, extra[2] = {};
      for (int b = 0; b < nb; ++b) {
        int w[kBlock];
        float d = 0.0f, m = 0.0f;
        Block(row + std::size_t(b) * kBytes, w, d, m);
        const int k = b % 2;
        for (int l = 0; l < 8; ++l) {
          int lane = 0;
          for (int j = 4 * l; j < 4 * l + 4; ++j) lane += w[j] * int(a[b].q[j]);
          acc[k][l] = std::fma(d * a[b].d, float(lane), acc[k][l]);
        }
        extra[k] = std::fma(m, a[b].s, extra[k]);
      }
      out[r * kTile + c] = sum_lanes(acc) + (extra[0] + extra[1]);
    }
  }
}

void block_q8_0(const std::uint8_t* p, int* w, float& d, float& m) {
  d = load_half(p);
  m = 0.0f;
  for (int j = 0; j < kBlock; ++j) w[j] = std::int8_t(p[2 + j]);
}
void block_q4_0(const std::uint8_t* p, int* w, float& d, float& m) {
  d = load_half(p);
  m = 0.0f;
  for (int j = 0; j < kBlock / 2; ++j) {
    w[j] = int(p[2 + j] & 0x0F) - 8;
    w[j + kBlock / 2] = int(p[2 + j] >> 4) - 8;
  }
}
void block_q4_1(const std::uint8_t* p, int* w, float& d, float& m) {
  d = load_half(p);
  m = load_half(p + 2);
  for (int j = 0; j < kBlock / 2; ++j) {
    w[j] = p[4 + j] & 0x0F;
    w[j + kBlock / 2] = p[4 + j] >> 4;
  }
}
// A Q5 block's 5-bit numbers (quant_formats.hpp): qh's bit j over element j's low nibble.
void q5_numbers(const std::uint8_t* qh, const std::uint8_t* qs, int* w) {
  for (int j = 0; j < kBlock; ++j) {
    const int nibble = j < kBlock / 2 ? qs[j] & 0x0F : qs[j - kBlock / 2] >> 4;
    w[j] = nibble | (((qh[j / 8] >> (j % 8)) & 1) << 4);
  }
}
void block_q5_0(const std::uint8_t* p, int* w, float& d, float& m) {
  d = load_half(p);
  m = 0.0f;
  q5_numbers(p + 2, p + 6, w);
  for (int j = 0; j < kBlock; ++j) w[j] -= 16;
}
void block_q5_1(const std::uint8_t* p, int* w, float& d, float& m) {
  d = load_half(p);
  m = load_half(p + 2);
  q5_numbers(p + 4, p + 8, w);
}

// The F16 and BF16 scalar path: quant_dot.hpp's RowDotF as loops. Weight(p) converts one
// stored number to float.
template <float (*Weight)(const std::uint8_t*)>
void row_dot_f_scalar_any(const std::uint8_t* rows_start, std::size_t row_bytes, int rows,
                          const float* x, int n, int count, float* out) {
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* row = rows_start + std::size_t(r) * row_bytes;
    for (int c = 0; c < count; ++c) {
      const float* xc = x + std::size_t(c) * std::size_t(n);
      float acc[2][8] = {};
      for (int i = 0; i < n; ++i) {
        float& lane = acc[(i / 8) % 2][i % 8];
        lane = std::fma(Weight(row + 2 * std::size_t(i)), xc[i], lane);
      }
      out[r * kTile + c] = sum_lanes(acc);
    }
  }
}

// The K-quant scalar path: quant_dot.hpp's RowDotK as loops. Block(p, w, sc, m, d, dmin)
// gives a super-block's 256 weights without their scales (w), each weight's sub-block scale
// (sc), the 8 minimums of its 32-runs (m, zeros for Q6_K), d and dmin (0 for Q6_K).
template <void (*Block)(const std::uint8_t*, int*, int*, int*, float&, float&),
          std::size_t kBytes>
void row_dot_k_scalar_any(const std::uint8_t* rows_start, std::size_t row_bytes, int rows,
                          const ActSuper* act, int nb, int count, float* out) {
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* row = rows_start + std::size_t(r) * row_bytes;
    for (int c = 0; c < count; ++c) {
      const ActSuper* a = act + std::size_t(c) * std::size_t(nb);
      float acc[8] = {}, extra = 0.0f;
      for (int b = 0; b < nb; ++b) {
        int w[kSuper], sc[kSuper], m[kSuper / kBlock];
        float d = 0.0f, dmin = 0.0f;
        Block(row + std::size_t(b) * kBytes, w, sc, m, d, dmin);
        int lane[8] = {}, imin = 0;
        for (int j = 0; j < kSuper; ++j) lane[(j % kBlock) / 4] += sc[j] * w[j] * a[b].q[j];
        for (int k = 0; k < kSuper / kBlock; ++k) imin += m[k] * a[b].sums[k];
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d * a[b].d, float(lane[l]), acc[l]);
        extra = std::fma(dmin * a[b].d, float(imin), extra);
      }
      out[r * kTile + c] =
          (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))) -
          extra;
    }
  }
}

void block_q4_k(const std::uint8_t* p, int* w, int* sc, int* m, float& d, float& dmin) {
  d = load_half(p);
  dmin = load_half(p + 2);
  for (int c = 0; c < 4; ++c) {
    int sc_lo, sc_hi;
    q4k_scale_min(p + 4, 2 * c, &sc_lo, &m[2 * c]);
    q4k_scale_min(p + 4, 2 * c + 1, &sc_hi, &m[2 * c + 1]);
    for (int l = 0; l < 32; ++l) {
      w[64 * c + l] = p[16 + 32 * c + l] & 0x0F;
      w[64 * c + 32 + l] = p[16 + 32 * c + l] >> 4;
      sc[64 * c + l] = sc_lo;
      sc[64 * c + 32 + l] = sc_hi;
    }
  }
}

void block_q6_k(const std::uint8_t* p, int* w, int* sc, int* m, float& d, float& dmin) {
  const std::uint8_t* ql = p;
  const std::uint8_t* qh = p + kSuper / 2;
  const auto* scales = reinterpret_cast<const std::int8_t*>(p + kSuper / 2 + kSuper / 4);
  d = load_half(p + kSuper / 2 + kSuper / 4 + kSuper / 16);
  dmin = 0.0f;
  for (int k = 0; k < kSuper / kBlock; ++k) m[k] = 0;
  for (int j = 0; j < kSuper; ++j) {
    // Element j = 128h + 32k + l: low bits in ql (byte 64h + 32(k % 2) + l, nibble k / 2),
    // high bits in qh's bit pair k of byte 32h + l.
    const int h = j / 128, k = (j % 128) / 32, l = j % 32;
    const int low = (ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
    const int high = (qh[32 * h + l] >> (2 * k)) & 3;
    w[j] = (low | (high << 4)) - 32;
    sc[j] = scales[j / 16];
  }
}

}  // namespace

RowDotK row_dot_k_scalar(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K:
      return row_dot_k_scalar_any<block_q4_k, 144>;
    case TensorType::kQ6_K:
      return row_dot_k_scalar_any<block_q6_k, 210>;
    default:
      return nullptr;
  }
}

RowDotK row_dot_k(TensorType type, QuantIsa isa) {
  return on_isa(isa, type, row_dot_k_scalar, row_dot_k_avx2, row_dot_k_avx512_vnni);
}

RowDotF row_dot_f_scalar(TensorType type) {
  switch (type) {
    case TensorType::kF16:
      return row_dot_f_scalar_any<load_half>;
    case TensorType::kBF16:
      return row_dot_f_scalar_any<load_bf16>;
    default:
      return nullptr;
  }
}

RowDotF row_dot_f(TensorType type, QuantIsa isa) {
  return on_isa(isa, type, row_dot_f_scalar, row_dot_f_avx2, row_dot_f_avx512_vnni);
}

RowDot row_dot_scalar(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return row_dot_scalar_any<block_q8_0, 34>;
    case TensorType::kQ4_0:
      return row_dot_scalar_any<block_q4_0, 18>;
    case TensorType::kQ4_1:
      return row_dot_scalar_any<block_q4_1, 20>;
    case TensorType::kQ5_0:
      return row_dot_scalar_any<block_q5_0, 22>;
    case TensorType::kQ5_1:
      return row_dot_scalar_any<block_q5_1, 24>;
    default:
      return nullptr;
  }
}

RowDot row_dot(TensorType type, QuantIsa isa) {
  return on_isa(isa, type, row_dot_scalar, row_dot_avx2, row_dot_avx512_vnni);
}

}  // namespace quant_dot

namespace {
// F16C (half-float conversions) from CPUID leaf 1: __builtin_cpu_supports knows "f16c" in GCC
// but not in every clang.
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}

// What quant_isa_supported answers, asked of the CPU once: CPUID is slow (a virtual machine
// traps it to its hypervisor), and matmul_quant_version checks its isa on every call.
bool cpu_runs(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::scalar:
      return true;
    case QuantIsa::avx2:
      return quant_dot::row_dot_avx2(TensorType::kQ8_0) != nullptr &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case QuantIsa::avx512_vnni:
      return quant_dot::row_dot_avx512_vnni(TensorType::kQ8_0) != nullptr &&
             cpu_runs(QuantIsa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}
}  // namespace

bool quant_isa_supported(QuantIsa isa) {
  static const bool avx2 = cpu_runs(QuantIsa::avx2), vnni = cpu_runs(QuantIsa::avx512_vnni);
  switch (isa) {
    case QuantIsa::scalar:
      return true;
    case QuantIsa::avx2:
      return avx2;
    case QuantIsa::avx512_vnni:
      return vnni;
  }
  return false;
}

QuantIsa quant_isa_best() {
  static const QuantIsa best = quant_isa_supported(QuantIsa::avx512_vnni) ? QuantIsa::avx512_vnni
                               : quant_isa_supported(QuantIsa::avx2)      ? QuantIsa::avx2
                                                                          : QuantIsa::scalar;
  return best;
}

const char* quant_isa_name(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::scalar:
      return "scalar";
    case QuantIsa::avx2:
      return "avx2";
    case QuantIsa::avx512_vnni:
      return "avx512-vnni";
  }
  return "?";
}

int matmul_quant_versions() { return 3; }

namespace {

// One token's activations quantized for weights of type: ActBlock for the 32-blocks,
// ActSuper for the K-quants.
void quantize_token(const float* x, int n, TensorType type, quant_dot::ActBlock* out) {
  quant_dot::quantize_activations(x, n, quant_dot::weight_offset(type), out);
}
void quantize_token(const float* x, int n, TensorType, quant_dot::ActSuper* out) {
  quant_dot::quantize_activations(x, n, out);
}
constexpr int numbers_per(const quant_dot::ActBlock*) { return quant_dot::kBlock; }
constexpr int numbers_per(const quant_dot::ActSuper*) { return quant_dot::kSuper; }

// The loop of rungs 2 and 3, called by every thread of a parallel region: tokens in chunks of
// kChunk, so every row passes over one chunk's activations (which stay in cache) before the
// next and a row's bytes are read once per chunk; rows in groups of kRows (one row dot call:
// more rows in flight), split the same way in every chunk, so no barrier between chunks.
// dot(o0, rows, t, count, out) fills out[r * kTile + c] for rows o0.. and tokens t.. .
template <class Dot>
void for_each_tile(float* y, int d, int T, int tile, const Dot& dot) {
  const int groups = (d + quant_dot::kRows - 1) / quant_dot::kRows;
  for (int t0 = 0; t0 < T; t0 += kChunk) {
    const int t1 = std::min(T, t0 + kChunk);
#pragma omp for schedule(static) nowait
    for (int g = 0; g < groups; ++g) {
      const int o0 = g * quant_dot::kRows, rows = std::min(quant_dot::kRows, d - o0);
      float out[quant_dot::kRows * quant_dot::kTile];
      for (int t = t0; t < t1; t += tile) {
        const int count = std::min(tile, t1 - t);
        dot(o0, rows, t, count, out);
        for (int r = 0; r < rows; ++r) {
          for (int c = 0; c < count; ++c) {
            y[std::size_t(t + c) * d + std::size_t(o0 + r)] = out[r * quant_dot::kTile + c];
          }
        }
      }
    }
  }
}

// Rungs 2 (tile = 1) and 3 (tile = kTile): the T rows of x quantized once, then each weight
// row dotted with tiles of tokens. Act is the activation block (ActBlock or ActSuper).
template <class Act>
void matmul_quant_integer(float* y, const float* x, const QuantMatrix& w, int T, int tile,
                          void (*dot)(const std::uint8_t*, std::size_t, int, const Act*, int,
                                      int, float*)) {
  const int n = w.n(), d = w.d(), nb = n / numbers_per(static_cast<const Act*>(nullptr));
  thread_local std::vector<Act> act;
  if (act.size() < std::size_t(T) * std::size_t(nb)) act.resize(std::size_t(T) * std::size_t(nb));
  Act* const a = act.data();
  const bool parallel = long(T) * n * d >= kParallelWork;
  // A few tokens' activations are quantized before the team starts: one barrier fewer per
  // call, which is what a decode step on a busy machine waits for.
  const bool parallel_activations = parallel && T >= quant_dot::kTile;
  if (!parallel_activations) {
    for (int t = 0; t < T; ++t)
      quantize_token(x + std::size_t(t) * n, n, w.type(), a + std::size_t(t) * nb);
  }
#pragma omp parallel if (parallel)
  {
    if (parallel_activations) {
#pragma omp for schedule(static)
      for (int t = 0; t < T; ++t)
        quantize_token(x + std::size_t(t) * n, n, w.type(), a + std::size_t(t) * nb);
    }
    for_each_tile(y, d, T, tile, [&](int o0, int rows, int t, int count, float* out) {
      dot(w.row(o0), w.row_bytes(), rows, a + std::size_t(t) * nb, nb, count, out);
    });
  }
}

// Rungs 2 and 3 for F16 and BF16: the activations stay float, read where they are.
void matmul_quant_float(float* y, const float* x, const QuantMatrix& w, int T, int tile,
                        quant_dot::RowDotF dot) {
  const int n = w.n(), d = w.d();
#pragma omp parallel if (long(T) * n * d >= kParallelWork)
  for_each_tile(y, d, T, tile, [&](int o0, int rows, int t, int count, float* out) {
    dot(w.row(o0), w.row_bytes(), rows, x + std::size_t(t) * n, n, count, out);
  });
}

}  // namespace

void matmul_quant_version(int version, QuantIsa isa, float* y, const float* x,
                          const QuantMatrix& w, int T) {
  if (version < 1 || version > matmul_quant_versions()) {
    throw Error("matmul_quant_version: version " + std::to_string(version) +
                " is outside 1.." + std::to_string(matmul_quant_versions()));
  }
  if (!quant_isa_supported(isa)) {
    throw Error(std::string("matmul_quant_version: this CPU cannot run ") + quant_isa_name(isa));
  }
  if (w.empty()) throw Error("matmul_quant_version: the weight matrix is empty");
  if (T < 1) throw Error("matmul_quant_version: T = " + std::to_string(T) + " (must be >= 1)");
  if (version == 1) return matmul_quant_ref(y, x, w, T);
  const int tile = version == 2 ? 1 : quant_dot::kTile;
  if (const quant_dot::RowDot dot = quant_dot::row_dot(w.type(), isa)) {
    matmul_quant_integer(y, x, w, T, tile, dot);
  } else if (const quant_dot::RowDotK dot_k = quant_dot::row_dot_k(w.type(), isa)) {
    matmul_quant_integer(y, x, w, T, tile, dot_k);
  } else if (const quant_dot::RowDotF dot_f = quant_dot::row_dot_f(w.type(), isa)) {
    matmul_quant_float(y, x, w, T, tile, dot_f);
  } else {
    matmul_quant_ref(y, x, w, T);
  }
}

void matmul_quant(float* y, const float* x, const QuantMatrix& w, int T) {
  matmul_quant_version(kMatmulQuantBestVersion, quant_isa_best(), y, x, w, T);
}

}  // namespace inferlab::kernels
