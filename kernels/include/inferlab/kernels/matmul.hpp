#pragma once
/// @file matmul.hpp
/// @brief The linear layer: y = x W^T for a batch of T token vectors.
///
/// Every version computes, for each token t and output row o,
///   y[t, o] = sum_i x[t, i] * w[o, i]
/// with x (T, n), w (d, n) row-major (out, in), y (T, d).
/// @note Cost: 2*T*n*d FLOPs; reads n*d weights once (4*n*d bytes), which dominates when T is
/// small: batch-1 decode is a matrix-vector product and is bound by memory bandwidth.

#include <cstddef>
#include <memory>

namespace inferlab::kernels {

/// @brief Reference: plain loops, the specification.
void matmul_ref(float* y, const float* x, const float* w, int T, int n, int d);

/// @brief The CPU ladder (kernels/README.md, "The CPU matmul ladder"): 1 lanes (one weight row
/// against up to 4 tokens, 16 independent lanes written as plain loops), 2 blocked
/// (register-tiled micro-kernel, rows blocked for L2, token panels for L1), 3 packed (weights
/// repacked into panels of 16 rows, outer products, one multiply-add chain per output).
/// Versions 1 and 2 compute every output in the same order, so they return the same bits;
/// version 3 has its own order (see matmul_packed). kMatmulCpuBestVersion is the best rung
/// for weights in their file layout: version 3 pays for repacking on every call, so the
/// forward pass packs its weights once (Model::cpu_linears()) and calls matmul_packed.
constexpr int kMatmulCpuBestVersion = 2;

namespace detail {
/// @brief Frees an array allocated with an alignment (operator new[] with std::align_val_t).
struct AlignedDelete {
  std::size_t align = 64;  ///< the alignment the array was allocated with
  /// @brief Frees @p p with the alignment it was allocated with.
  void operator()(float* p) const;
};
}  // namespace detail

/// @brief A weight matrix (d, n) repacked for matmul_packed: panels of kPanelRows rows, each
/// stored column by column (panel p, column i holds w[16 p .. 16 p + 15, i], 16 contiguous
/// floats, 64-byte aligned; 2 MiB aligned and on huge pages from 2 MiB up, see huge_pages.hpp).
/// The last panel is padded with zero rows when d % 16 != 0.
class PackedMatrix {
 public:
  /// @brief Rows per panel: one 16-float vector per column.
  static constexpr int kPanelRows = 16;
  /// @brief An empty matrix (no panels); matmul_packed refuses it.
  PackedMatrix() = default;
  /// @brief Packs @p w, (d, n) row-major (out, in); the copy owns its memory.
  /// @throws inferlab::Error if @p w is null, n < 1 or d < 1.
  PackedMatrix(const float* w, int n, int d);
  int n() const { return n_; }            ///< input features
  int d() const { return d_; }            ///< output features
  int panels() const { return panels_; }  ///< ceil(d / 16)
  /// @brief Panel @p p: n columns of 16 floats.
  const float* panel(int p) const {
    return data_.get() + std::size_t(p) * kPanelRows * std::size_t(n_);
  }
  /// @brief Bytes the packed copy holds (padding included).
  std::size_t bytes() const {
    return std::size_t(panels_) * kPanelRows * std::size_t(n_) * sizeof(float);
  }

 private:
  std::unique_ptr<float[], detail::AlignedDelete> data_;
  int n_ = 0, d_ = 0, panels_ = 0;
};

/// @brief Rung 3: y = x W^T with W packed. Same y and x as matmul_ref; T tokens.
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w the weights, packed
/// @param T tokens
/// @throws inferlab::Error for an empty (default-constructed) @p w.
/// @note Each output is one chain of multiply-adds in increasing i, starting from zero:
/// y[t, o] = fma(w[o, n-1], x[t, n-1], ... fma(w[o, 0], x[t, 0], 0.0f)) (a multiply, rounded,
/// then an add where the CPU has no FMA instruction). The chain is the same for every T, tile,
/// batch position and thread count: batch invariant, bit for bit. OpenMP over panels, one
/// thread below about 128K multiply-adds.
void matmul_packed(float* y, const float* x, const PackedMatrix& w, int T);

/// @brief Number of CPU versions (valid versions are 1..matmul_cpu_versions()).
/// @return 3
int matmul_cpu_versions();

/// @brief One rung of the CPU ladder; same arguments as matmul_ref after the version.
/// @param version 1..matmul_cpu_versions()
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w (d, n) weights, row-major (out, in)
/// @param T tokens (rows of x and y)
/// @param n input features
/// @param d output features
/// @throws inferlab::Error for a version outside 1..matmul_cpu_versions().
/// @note Versions 1 and 2 accumulate y[t, o] in 16 lanes (lane l takes the products at
/// i = l mod 16, in increasing i), reduces them by a fixed halving tree and adds the n % 16
/// leftover products, summed in order. That order depends only on n, never on T, on the
/// token's place in the batch or on the thread count, so a token's result is identical whether
/// it runs alone or in a batch (batch invariance, bit for bit). Version 3 packs @p w and
/// runs matmul_packed (one chain per output, also batch invariant).
void matmul_cpu_version(int version, float* y, const float* x, const float* w, int T, int n, int d);

/// @brief The fast CPU version for weights in their file layout: matmul_cpu_version() with
/// kMatmulCpuBestVersion. OpenMP over rows of W; one thread below about 128K multiply-adds.
/// (The forward pass does not call it: it packs its weights once and calls matmul_packed.)
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w (d, n) weights, row-major (out, in)
/// @param T tokens (rows of x and y)
/// @param n input features
/// @param d output features
void matmul_cpu(float* y, const float* x, const float* w, int T, int n, int d);

}  // namespace inferlab::kernels
