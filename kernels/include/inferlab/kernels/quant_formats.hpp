#pragma once
/// @file quant_formats.hpp
/// @brief The tensor storage types of GGUF files (ggml's numbering) that InferLab reads: F32,
/// F16, BF16, the block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the K-quants Q4_K, Q6_K, with
/// reference dequantize and quantize routines (plain loops: the specification of each layout).
///
/// A block format stores 32 consecutive numbers as one block: a float16 scale `d` (and, for
/// Q4_1, a float16 minimum `m`) followed by the quantized values.
///  - Q8_0 (34 bytes): d, then 32 int8 q; x = q * d.
///  - Q4_0 (18 bytes): d, then 16 bytes of nibbles; the low nibble of byte j is element j, the
///    high nibble element j + 16; x = (q - 8) * d.
///  - Q4_1 (20 bytes): d, m, then 16 bytes of nibbles laid out as Q4_0; x = q * d + m.
///  - Q5_0 (22 bytes): d, then 4 bytes qh, then 16 bytes of nibbles laid out as Q4_0; bit j of
///    qh (a little-endian 32-bit word) is element j's fifth, high bit; x = (q - 16) * d.
///  - Q5_1 (24 bytes): d, m, then qh and nibbles laid out as Q5_0's; x = q * d + m.
///
/// A K-quant stores 256 numbers as one super-block of sub-blocks, each sub-block with its own
/// small integer scale, and the super-block with the float16 scale of those scales.
///  - Q4_K (144 bytes, 4.5 bits per number): float16 d, float16 dmin, 12 bytes holding eight
///    6-bit sub-block scales sc[s] and eight 6-bit minimums m[s] (s = 0..7, 32 numbers each),
///    then 128 bytes of nibbles. Bytes 0-3 hold sc[0..3] in their low 6 bits, bytes 4-7
///    m[0..3]; byte 8 + k holds sc[4 + k]'s low 4 bits (low nibble) and m[4 + k]'s (high
///    nibble), and the top 2 bits of sc[4 + k] and m[4 + k] sit in the top 2 bits of bytes k
///    and 4 + k. Nibble byte 32 * c + l holds element 64 * c + l (low nibble) and 64 * c + 32
///    + l (high nibble); x = d * sc[s] * q - dmin * m[s].
///  - Q6_K (210 bytes, 6.5625 bits per number): 128 bytes ql (the low 4 bits of each 6-bit
///    q), 64 bytes qh (the high 2 bits), sixteen int8 sub-block scales sc[s] (16 numbers
///    each), then float16 d. In half h (128 numbers) of the super-block, for l in 0..31:
///    ql[64h + l] holds elements 128h + l (low nibble) and 128h + 64 + l (high nibble),
///    ql[64h + 32 + l] elements 128h + 32 + l and 128h + 96 + l, and qh[32h + l] the high
///    bits of 128h + l, + 32, + 64, + 96 in bit pairs 0-1, 2-3, 4-5, 6-7; x = d * sc[s] *
///    (q - 32).
///
/// The quantizers round as llama.cpp's reference quantizers (ggml-quants.c: quantize_row_*_ref,
/// the ones `llama-quantize` uses without an importance matrix) do, so a file written here
/// holds the blocks llama.cpp would write for the same floats, byte for byte.

#include <cstddef>
#include <cstdint>
#include <string>

namespace inferlab::kernels {

/// @brief A tensor storage type, numbered as ggml numbers it in GGUF files.
enum class TensorType : std::uint32_t {
  kF32 = 0,    ///< IEEE single
  kF16 = 1,    ///< IEEE half
  kQ4_0 = 2,   ///< 4-bit blocks of 32 with a float16 scale
  kQ4_1 = 3,   ///< 4-bit blocks of 32 with a float16 scale and minimum
  kQ5_0 = 6,   ///< 5-bit blocks of 32 with a float16 scale
  kQ5_1 = 7,   ///< 5-bit blocks of 32 with a float16 scale and minimum
  kQ8_0 = 8,   ///< 8-bit blocks of 32 with a float16 scale
  kQ4_K = 12,  ///< 4-bit super-blocks of 256: eight 6-bit scales and minimums, float16 d, dmin
  kQ6_K = 14,  ///< 6-bit super-blocks of 256: sixteen int8 scales and a float16 d
  kBF16 = 30   ///< bfloat16
};

/// @brief The ggml name of a type id ("F32", "Q4_1", "Q6_K", ...) for any id ggml defines,
/// or "type N" for an id it does not.
std::string ggml_type_name(std::uint32_t ggml_type);
/// @brief Whether InferLab reads @p ggml_type (one of the TensorType values).
bool is_supported_tensor_type(std::uint32_t ggml_type);
/// @brief The supported types' names, for messages: "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
/// Q5_1, Q4_K, Q6_K".
const char* supported_tensor_types();
/// @brief Numbers per block: 1 for F32, F16, BF16; 32 for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1; 256
/// for the K-quants.
std::size_t block_elements(TensorType type);
/// @brief Bytes per block: 4, 2, 2, 34 (Q8_0), 18 (Q4_0), 20 (Q4_1), 22 (Q5_0), 24 (Q5_1),
/// 144 (Q4_K), 210 (Q6_K).
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
