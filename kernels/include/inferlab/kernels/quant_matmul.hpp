#pragma once
/// @file quant_matmul.hpp
/// @brief The linear layer on weights that stay in a block format (Q8_0, Q4_0, Q4_1, Q5_0,
/// Q5_1, the K-quants, F16, BF16): y = x W^T with W read as stored, never as a float copy.
///
/// Every version computes, for each token t and output row o,
///   y[t, o] = sum_i x[t, i] * w[o, i]
/// with x (T, n) float, w (d, n) stored as QuantMatrix rows, y (T, d), as matmul_ref does for
/// float weights. The ladder (beside the float one in matmul.hpp):
///  1. reference: each weight row dequantized to floats (once per call, shared by the T tokens)
///     and dotted in float. Exact up to float rounding: the specification.
///  2. integer: each token's activations quantized once to 8-bit blocks (llama.cpp's scheme:
///     32-number blocks with a float scale, for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 weights), then one
///     integer dot product per block, scaled once per block. For the K-quants (Q4_K, Q6_K)
///     the activations come in super-blocks of 256 with one float scale and the integer sum of
///     each 32-run (llama.cpp's Q8_K): the sub-block scales multiply integer dot products,
///     the 256 numbers add up in integers, and one float multiply-add per super-block scales
///     them (Q4_K's minimums: one more, from the runs' sums). AVX2 (`vpmaddubsw` /
///     `vpmaddwd`) and AVX-512 VNNI (`vpdpbusd` on unsigned weights, Q8_0's w + 128, Q4_0's
///     nibbles and Q5_0's 5-bit numbers, the lanes started at minus the offset times the
///     activations' sums) paths are chosen at run time (QuantIsa); all paths form the same
///     integer sums in the same 8 lanes and add them in the same order (even blocks into one set of
///     float lanes, odd blocks into another: two independent chains), so they return the same
///     bits. Each call of a row dot serves 4 weight rows at once (more loads in flight, the
///     activations loaded once for the 4); on AVX-512 a pair of blocks fills one 512-bit
///     register (the even block's lanes in the low half, the odd one's in the high half).
///  3. batched: version 2 with tiles of tokens: each weight block is unpacked once and used for
///     a tile of 8 tokens, held in registers 2 rows by 4 tokens (2 by 2 on AVX2; Q4_1 on
///     AVX-512 1 row by 8 tokens, faster for it), and the rows pass over the tokens 64 at a
///     time so their activations stay in cache (prefill). The per-token arithmetic is version
///     2's, so a token's output has the same bits whatever T and its place in the batch
///     (batch invariant).
/// Versions 2 and 3 differ from version 1 by the activation rounding: per element at most half
/// a step of its block (amax / 254; a block of 32, or of 256 for the K-quants), so
/// |y2 - y1| <= sum over blocks of (sum_i |w[o, i]|) * amax_block(x[t]) / 254, plus float
/// rounding (tests/test_quant_matmul.cpp). F16 and BF16 weights keep the activations in float
/// on versions 2 and 3: each weight converted exactly (F16C's `vcvtph2ps`, BF16 shifted left
/// 16 bits) and multiplied-added into two chains of 8 float lanes (number i into lane i % 8 of
/// chain (i / 8) % 2), the chains added lane by lane (v) and the lanes as
/// ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), in the same row and token tiles; they
/// differ from version 1 only by the order of the float sum, and give the same bits on every
/// path. F32 runs version 1.
/// @note Cost: 2*T*n*d FLOPs; reads the stored bytes of W once per call (n*d*bits/8), which is
/// the point: batch-1 decode is bound by those bytes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "inferlab/kernels/quant_formats.hpp"

namespace inferlab::kernels {

/// @brief A weight matrix (d, n) kept in its storage type: d rows of n numbers, each row
/// tensor_bytes(type, n) bytes in GGUF's block layout, rows back to back (64-byte aligned
/// start). Copies share the bytes (read-only once built).
class QuantMatrix {
 public:
  /// @brief An empty matrix; the matmuls refuse it.
  QuantMatrix() = default;
  /// @brief Quantizes @p w, (d, n) row-major floats, into @p type with quantize_ref().
  /// @throws inferlab::Error if n or d < 1, or n is not a multiple of block_elements(type).
  static QuantMatrix quantize(TensorType type, const float* w, int n, int d);
  /// @brief Copies @p rows, d rows of tensor_bytes(type, n) bytes (a GGUF tensor's data), once.
  /// @throws inferlab::Error as quantize().
  static QuantMatrix copy_rows(TensorType type, const void* rows, int n, int d);

  bool empty() const { return d_ == 0; }     ///< true for a default-constructed matrix
  TensorType type() const { return type_; }  ///< the storage type of every row
  int n() const { return n_; }               ///< input features (numbers per row)
  int d() const { return d_; }               ///< output features (rows)
  std::size_t row_bytes() const { return row_bytes_; }  ///< stored bytes of one row
  /// @brief Row @p o's bytes (block layout).
  const std::uint8_t* row(int o) const { return data_.get() + std::size_t(o) * row_bytes_; }
  /// @brief Bytes of all the rows.
  std::size_t bytes() const { return std::size_t(d_) * row_bytes_; }
  /// @brief Stored bytes per weight: 4 (F32), 2 (F16, BF16), 1.0625 (Q8_0), 0.5625 (Q4_0), ...
  double bytes_per_weight() const { return double(row_bytes_) / double(n_); }
  /// @brief Row @p o as floats (dequantize_ref).
  /// @param o the row, in [0, d)
  /// @param dst (n) floats
  void dequantize_row(int o, float* dst) const;

 private:
  std::shared_ptr<std::uint8_t[]> data_;
  TensorType type_ = TensorType::kF32;
  int n_ = 0, d_ = 0;
  std::size_t row_bytes_ = 0;
  static QuantMatrix allocate(TensorType type, int n, int d);
};

/// @brief Instruction sets rungs 2 and 3 can use; all give the same bits.
enum class QuantIsa {
  scalar,      ///< plain C++ (the 8 lanes written as loops)
  avx2,        ///< AVX2 + FMA + F16C: `vpmaddubsw` then `vpmaddwd`
  avx512_vnni  ///< AVX-512 VL + VNNI: `vpdpbusd` (512-bit registers for one token, 256 for tiles)
};
/// @brief Whether this CPU (and this build: x86-64 with GCC) runs @p isa; scalar always.
bool quant_isa_supported(QuantIsa isa);
/// @brief The best supported instruction set: the one matmul_quant() uses.
QuantIsa quant_isa_best();
/// @brief "scalar", "avx2" or "avx512-vnni".
const char* quant_isa_name(QuantIsa isa);

/// @brief Rung 1, the reference: every row dequantized, then float dot products (in
/// increasing i, one chain per output). OpenMP over rows.
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w the weights, stored
/// @param T tokens
/// @throws inferlab::Error for an empty @p w or T < 1.
void matmul_quant_ref(float* y, const float* x, const QuantMatrix& w, int T);

/// @brief Number of versions of the quantized ladder.
/// @return 3
int matmul_quant_versions();

/// @brief Rung 3 (batched integer) is the best: matmul_quant() runs it.
constexpr int kMatmulQuantBestVersion = 3;

/// @brief One rung of the quantized ladder; the arguments of matmul_quant_ref after these two.
/// @param version 1..matmul_quant_versions()
/// @param isa the instruction set of versions 2 and 3 (ignored by version 1)
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w the weights, stored
/// @param T tokens
/// @throws inferlab::Error for a version outside the ladder, an @p isa this CPU cannot run,
/// an empty @p w or T < 1.
/// @note Versions 2 and 3 quantize the activations into a per-thread buffer that grows to
/// the largest T * n seen and is then reused: after a warm-up call they allocate nothing.
void matmul_quant_version(int version, QuantIsa isa, float* y, const float* x,
                          const QuantMatrix& w, int T);

/// @brief The fast version: rung kMatmulQuantBestVersion with quant_isa_best().
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w the weights, stored
/// @param T tokens
void matmul_quant(float* y, const float* x, const QuantMatrix& w, int T);

}  // namespace inferlab::kernels
