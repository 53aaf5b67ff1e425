#pragma once
/// @file dtype.hpp
/// @brief The number formats InferLab names: the ones the cost models count bytes with
/// (f32 .. int4), and the subset the KV storage really implements (f32, f16, int8).
///
/// One enum for both, so a KV storage type is also a calculator format: chapter 02 asks the
/// calculator about the very type its cache was built with. Names are the enumerators' own
/// ("f32", "bf16", ...); parse_dtype() also reads the other usual spellings.

#include <cstddef>
#include <string>
#include <vector>

namespace inferlab {

/// @brief How one number (a weight, an activation, a cached key or value) is stored.
enum class DType {
  f32,   ///< IEEE single, 4 bytes
  f16,   ///< IEEE half, 2 bytes (10-bit mantissa; round to nearest even)
  bf16,  ///< bfloat16, 2 bytes (8-bit exponent like f32, 7-bit mantissa)
  fp8,   ///< an 8-bit float (E4M3 or E5M2), 1 byte
  int8,  ///< 1 byte plus a scale shared by a group of numbers: x ~= scale * q, q in [-127, 127]
  int4,  ///< half a byte plus a group scale: two numbers per byte
};

/// @brief Bytes per number: 4, 2, 2, 1, 1, 0.5 (group scales not included).
double dtype_bytes(DType type);
/// @brief "f32", "f16", "bf16", "fp8", "int8", "int4".
const char* dtype_name(DType type);
/// @brief Parses a dtype_name(), or one of "fp32", "float32", "fp16", "float16", "bfloat16".
/// @throws inferlab::Error naming the valid choices.
DType parse_dtype(const std::string& name);
/// @brief Every DType, widest first.
std::vector<DType> all_dtypes();

/// @brief Whether the KV storage (kv_quant.hpp, KV pools and caches) implements @p type: f32,
/// f16 and int8 (with one float scale per (token, KV head)).
bool kv_storage_supported(DType type);
/// @brief The types kv_storage_supported() accepts, widest first.
std::vector<DType> kv_storage_dtypes();
/// @brief Throws inferlab::Error "@p where: KV storage type 'bf16' is not implemented (f32, f16
/// or int8)" unless kv_storage_supported(@p type).
void require_kv_storage(DType type, const char* where);
/// @brief Parses a KV storage flag (--kv-dtype): any parse_dtype() spelling of f32, f16 or int8.
/// @throws inferlab::Error for an unknown name or a format the KV storage does not implement,
/// naming the implemented ones.
DType parse_kv_dtype(const std::string& name);

}  // namespace inferlab
