#pragma once
/// @file quant_formats.hpp
/// @brief The tensor storage types of GGUF files (ggml's numbering) that InferLab reads: F32,
/// F16, BF16 and the block formats Q8_0, Q4_0, Q4_1, with reference dequantize and quantize
/// routines (plain loops: the specification of each layout).
///
/// A block format stores 32 consecutive numbers as one block: a float16 scale `d` (and, for
/// Q4_1, a float16 minimum `m`) followed by the quantized values.
///  - Q8_0 (34 bytes): d, then 32 int8 q; x = q * d.
///  - Q4_0 (18 bytes): d, then 16 bytes of nibbles; the low nibble of byte j is element j, the
///    high nibble element j + 16; x = (q - 8) * d.
///  - Q4_1 (20 bytes): d, m, then 16 bytes of nibbles laid out as Q4_0; x = q * d + m.
/// The quantizers round as llama.cpp's reference quantizers do, so a file written here holds
/// the blocks llama.cpp would write for the same floats.

#include <cstddef>
#include <cstdint>
#include <string>

namespace inferlab::kernels {

/// @brief A tensor storage type, numbered as ggml numbers it in GGUF files.
enum class TensorType : std::uint32_t {
  kF32 = 0,   ///< IEEE single
  kF16 = 1,   ///< IEEE half
  kQ4_0 = 2,  ///< 4-bit blocks of 32 with a float16 scale
  kQ4_1 = 3,  ///< 4-bit blocks of 32 with a float16 scale and minimum
  kQ8_0 = 8,  ///< 8-bit blocks of 32 with a float16 scale
  kBF16 = 30  ///< bfloat16
};

/// @brief The ggml name of a type id ("F32", "Q4_1", "Q6_K", ...) for any id ggml defines,
/// or "type N" for an id it does not.
std::string ggml_type_name(std::uint32_t ggml_type);
/// @brief Whether InferLab reads @p ggml_type (one of the TensorType values).
bool is_supported_tensor_type(std::uint32_t ggml_type);
/// @brief The supported types' names, for messages: "F32, F16, BF16, Q8_0, Q4_0, Q4_1".
const char* supported_tensor_types();
/// @brief Numbers per block: 1 for F32, F16, BF16; 32 for the block formats.
std::size_t block_elements(TensorType type);
/// @brief Bytes per block: 4, 2, 2, 34 (Q8_0), 18 (Q4_0), 20 (Q4_1).
std::size_t block_bytes(TensorType type);
/// @brief Bytes of @p n numbers stored as @p type (@p n a multiple of block_elements()).
std::size_t tensor_bytes(TensorType type, std::size_t n);

/// @brief Reference dequantizer: @p n numbers of @p type at @p src as floats in @p dst.
/// @param type the storage type
/// @param src tensor_bytes(type, n) bytes (no alignment needed)
/// @param dst (n) floats
/// @param n a multiple of block_elements(type)
/// @throws inferlab::Error if @p n is not a multiple of the block size.
void dequantize_ref(TensorType type, const void* src, float* dst, std::size_t n);

/// @brief Reference quantizer, llama.cpp's rounding: the inverse of dequantize_ref() up to the
/// format's precision (exact for F32).
/// @param type the storage type
/// @param src (n) floats
/// @param dst tensor_bytes(type, n) bytes
/// @param n a multiple of block_elements(type)
/// @throws inferlab::Error if @p n is not a multiple of the block size.
void quantize_ref(TensorType type, const float* src, void* dst, std::size_t n);

}  // namespace inferlab::kernels
