#pragma once
/// @file sampling_cuda.hpp
/// @brief Choosing the next token on the device, so that the logits never leave the GPU:
/// greedy argmax and top-p (nucleus) sampling, each with a CPU twin that is its specification.

struct CUstream_st;

namespace inferlab::kernels {

/// @name Greedy
/// @{

/// @brief Versions: 1 one block, strided scan and block-wide (value, index) reduction.
constexpr int kArgmaxBestVersion = 1;
/// @brief Number of versions (valid versions are 1..argmax_cuda_versions()).
int argmax_cuda_versions();

/// @brief CPU twin: the index of the largest non-NaN value of x (n), the lowest index on ties;
/// 0 if every value is NaN.
int argmax_ref(const float* x, int n);

/// @brief argmax_ref on the device.
/// @param version 1..argmax_cuda_versions()
/// @param out_index one int in device memory (written)
/// @param x (n) device pointer
/// @param n number of values (V for logits)
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @note Reads 4*n bytes.
void argmax_cuda(int version, int* out_index, const float* x, int n, CUstream_st* stream = nullptr);
/// @}

/// @name Top-p (nucleus) sampling
/// Specification (shared by the twin and every version):
///  1. p_i = exp((x_i - max x) / temperature) (unnormalised; the most probable token has 1);
///  2. tau = the largest float t such that the mass of {p_i >= t} is at least top_p * sum p;
///     the kept set is {i : p_i >= tau}: the most probable tokens, in order, up to and including
///     the one whose cumulative mass reaches top_p. Unlike inferlab::top_p_filter, every token
///     tied with the last one kept is kept too (no order among equal probabilities is needed);
///  3. the token is the first kept index i (in index order) whose cumulative kept mass exceeds
///     u * (kept mass); if rounding leaves none, the last kept index.
/// Float sums are accumulated in different orders on the CPU and the GPU, so when u * mass (or
/// top_p * sum) falls within round-off of a boundary the two may pick neighbouring tokens.
/// @{

/// @brief Versions: 1 one block: max and sum reductions, tau by bisection on the bits of a
/// positive float (31 block-wide passes, no sort, no scratch memory), then a chunked block-wide
/// prefix sum (cub::BlockScan) for the inverse CDF.
constexpr int kTopPSampleBestVersion = 1;
/// @brief Number of versions (valid versions are 1..top_p_sample_cuda_versions()).
int top_p_sample_cuda_versions();

/// @brief CPU twin (the specification above, by sorting).
/// @param logits (n) scores, finite (or -inf for masked tokens)
/// @param n number of scores (V)
/// @param temperature > 0; divides the logits before the exponential
/// @param top_p in (0, 1]: the probability mass kept
/// @param u in [0, 1): the uniform draw that picks the token
/// @return the sampled index in [0, n)
int top_p_sample_ref(const float* logits, int n, float temperature, float top_p, float u);

/// @brief top_p_sample_ref on the device.
/// @param version 1..top_p_sample_cuda_versions()
/// @param out_token one int in device memory (written)
/// @param logits (n) device pointer, finite (or -inf for masked tokens)
/// @param n number of scores (V)
/// @param temperature > 0
/// @param top_p in (0, 1]
/// @param u in [0, 1), drawn by the caller's RNG
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @throws std::invalid_argument for n < 1, temperature <= 0, top_p outside (0, 1] or u outside
/// [0, 1).
void top_p_sample_cuda(int version, int* out_token, const float* logits, int n, float temperature,
                       float top_p, float u, CUstream_st* stream = nullptr);
/// @}

}  // namespace inferlab::kernels
