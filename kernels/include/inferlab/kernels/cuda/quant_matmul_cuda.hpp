#pragma once
/// @file quant_matmul_cuda.hpp
/// @brief The CUDA twins of the quantized matmul (inferlab/kernels/quant_matmul.hpp) for Q8_0
/// and Q4_0 weights: y = x W^T with W's rows in GGUF block layout on the device. The
/// activations are quantized once per token into 32-number blocks (int8 and a float scale,
/// d = amax / 127, rounding to nearest even), then each block's integer dot product is taken
/// 4 bytes at a time with `__dp4a` and scaled once per block. One warp per output: its lanes
/// take blocks lane, lane + 32, ... and a warp sum adds them.

#include <cstddef>
#include <cstdint>

#include "inferlab/kernels/quant_formats.hpp"

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Whether matmul_quant_cuda runs weights stored as @p type (Q8_0 and Q4_0).
bool quant_cuda_supports(TensorType type);

/// @brief y = x W^T on the device, W stored as @p type.
/// @param y (T, d) device pointer, output
/// @param x (T, n) device pointer
/// @param w (d, n) device pointer: d rows of tensor_bytes(type, n) bytes
/// @param type Q8_0 or Q4_0
/// @param T tokens
/// @param n input features, a multiple of 32
/// @param d output features
/// @param workspace device scratch for the quantized activations, at least
/// matmul_quant_cuda_workspace_bytes(T, n) bytes (the forward pass keeps one for every call)
/// @param workspace_bytes its size, checked
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @throws inferlab::Error for another type, a non-positive dimension, n not a multiple of 32,
/// a too small workspace, or a failed launch.
/// @note Cost: 2*T*n*d operations (integer multiply-adds); reads the stored bytes of W once
/// per token (n*d*bits/8).
void matmul_quant_cuda(float* y, const float* x, const std::uint8_t* w, TensorType type, int T,
                       int n, int d, void* workspace, std::size_t workspace_bytes,
                       CUstream_st* stream = nullptr);

/// @brief The bytes of workspace matmul_quant_cuda needs for @p T tokens of @p n features
/// (their int8 values and one float scale per 32; 0 for a non-positive size).
std::size_t matmul_quant_cuda_workspace_bytes(int T, int n);

/// @brief matmul_quant_cuda with a workspace of its own: allocated, and freed after the call
/// waits for its kernels (simple, but an allocation and a synchronisation per call).
/// @param y (T, d) device pointer, output
/// @param x (T, n) device pointer
/// @param w (d, n) device pointer: d rows of tensor_bytes(type, n) bytes
/// @param type Q8_0 or Q4_0
/// @param T tokens
/// @param n input features, a multiple of 32
/// @param d output features
/// @param stream the stream to enqueue on (nullptr: default stream); waited for
/// @throws inferlab::Error as the call with a workspace.
void matmul_quant_cuda(float* y, const float* x, const std::uint8_t* w, TensorType type, int T,
                       int n, int d, CUstream_st* stream = nullptr);

/// @brief The CPU reference of matmul_quant_cuda, same arguments on host pointers (no stream):
/// the same activation blocks and integer block dots, the block terms added in increasing
/// order (the GPU adds them in its own order, so the two agree up to float rounding).
/// @param y (T, d) output
/// @param x (T, n) input rows
/// @param w d rows of tensor_bytes(type, n) bytes
/// @param type Q8_0 or Q4_0
/// @param T tokens
/// @param n input features, a multiple of 32
/// @param d output features
/// @throws inferlab::Error as matmul_quant_cuda.
void matmul_quant_cuda_ref(float* y, const float* x, const std::uint8_t* w, TensorType type,
                           int T, int n, int d);

/// @brief Rows of a matrix stored as Q8_0 or Q4_0, dequantized on the device: x[t, :] =
/// W[rows[t], :] (the embedding lookup of a table kept in blocks: only the rows a step needs
/// become floats). Each number is its block's scale times its quantized value, the product
/// dequantize_ref() forms, so the two give the same bits.
/// @param x (T, n) device pointer, output
/// @param w (d, n) device pointer: d rows of tensor_bytes(type, n) bytes
/// @param type Q8_0 or Q4_0
/// @param rows (T) device pointer: row ids in [0, d) (an id outside writes NaN: the caller
/// validates them first)
/// @param T rows to dequantize
/// @param n numbers per row, a multiple of 32
/// @param d rows of @p w
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @throws inferlab::Error for another type, a non-positive dimension, n not a multiple of 32,
/// or a failed launch.
void dequantize_rows_cuda(float* x, const std::uint8_t* w, TensorType type, const int* rows, int T,
                          int n, int d, CUstream_st* stream = nullptr);

/// @brief The CPU reference of dequantize_rows_cuda, same arguments on host pointers (no
/// stream): dequantize_ref() of each row.
/// @param x (T, n) output
/// @param w d rows of tensor_bytes(type, n) bytes
/// @param type Q8_0 or Q4_0
/// @param rows (T) row ids in [0, d)
/// @param T rows to dequantize
/// @param n numbers per row, a multiple of 32
/// @param d rows of @p w
/// @throws inferlab::Error as dequantize_rows_cuda, and for a row id outside [0, d).
void dequantize_rows_cuda_ref(float* x, const std::uint8_t* w, TensorType type, const int* rows,
                              int T, int n, int d);

}  // namespace inferlab::kernels
