// GGUF tensor storage types: sizes, names, reference dequantizers and quantizers.
#include "inferlab/kernels/quant_formats.hpp"

#include <Eigen/Core>  // Eigen::half, Eigen::bfloat16: round-to-nearest-even conversions

#include <algorithm>
#include <cmath>
#include <cstring>

#include "inferlab/kernels/error.hpp"

namespace inferlab::kernels {

namespace {

constexpr std::size_t kBlock = 32;

float load_half(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  return float(Eigen::numext::bit_cast<Eigen::half>(bits));
}

void store_half(std::uint8_t* p, float x) {
  const auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(x));
  std::memcpy(p, &bits, 2);
}

void require_blocks(TensorType type, std::size_t n, const char* where) {
  if (n % block_elements(type) != 0) {
    throw Error(std::string(where) + ": " + std::to_string(n) + " numbers of type " +
                ggml_type_name(std::uint32_t(type)) + " are not a whole number of " +
                std::to_string(block_elements(type)) + "-number blocks");
  }
}

}  // namespace

std::string ggml_type_name(std::uint32_t ggml_type) {
  // ggml's type table (ggml.h, enum ggml_type); ids 4 and 5 (Q4_2, Q4_3) were withdrawn.
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "",       "",      "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  constexpr std::uint32_t kCount = sizeof kNames / sizeof kNames[0];
  if (ggml_type < kCount && kNames[ggml_type][0] != '\0') return kNames[ggml_type];
  return "type " + std::to_string(ggml_type);
}

bool is_supported_tensor_type(std::uint32_t ggml_type) {
  switch (TensorType(ggml_type)) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
      return true;
  }
  return false;
}

const char* supported_tensor_types() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_1"; }

std::size_t block_elements(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return 1;
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
      return kBlock;
  }
  throw Error("block_elements: unsupported tensor type " + ggml_type_name(std::uint32_t(type)));
}

std::size_t block_bytes(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 4;
    case TensorType::kF16:
    case TensorType::kBF16:
      return 2;
    case TensorType::kQ8_0:
      return 2 + kBlock;
    case TensorType::kQ4_0:
      return 2 + kBlock / 2;
    case TensorType::kQ4_1:
      return 4 + kBlock / 2;
  }
  throw Error("block_bytes: unsupported tensor type " + ggml_type_name(std::uint32_t(type)));
}

std::size_t tensor_bytes(TensorType type, std::size_t n) {
  require_blocks(type, n, "tensor_bytes");
  return n / block_elements(type) * block_bytes(type);
}

void dequantize_ref(TensorType type, const void* src, float* dst, std::size_t n) {
  require_blocks(type, n, "dequantize_ref");
  const auto* p = static_cast<const std::uint8_t*>(src);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, p, n * sizeof(float));
      return;
    case TensorType::kF16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = load_half(p + 2 * i);
      return;
    case TensorType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        dst[i] = float(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
      }
      return;
    case TensorType::kQ8_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p);
        for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float(std::int8_t(p[2 + j])) * d;
      }
      return;
    case TensorType::kQ4_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          dst[j] = float(int(p[2 + j] & 0x0F) - 8) * d;
          dst[j + kBlock / 2] = float(int(p[2 + j] >> 4) - 8) * d;
        }
      }
      return;
    case TensorType::kQ4_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p), m = load_half(p + 2);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          dst[j] = float(p[4 + j] & 0x0F) * d + m;
          dst[j + kBlock / 2] = float(p[4 + j] >> 4) * d + m;
        }
      }
      return;
  }
}

void quantize_ref(TensorType type, const float* src, void* dst, std::size_t n) {
  require_blocks(type, n, "quantize_ref");
  auto* p = static_cast<std::uint8_t*>(dst);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(p, src, n * sizeof(float));
      return;
    case TensorType::kF16:
      for (std::size_t i = 0; i < n; ++i) store_half(p + 2 * i, src[i]);
      return;
    case TensorType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(src[i]));
        std::memcpy(p + 2 * i, &bits, 2);
      }
      return;
    case TensorType::kQ8_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        float amax = 0.0f;
        for (std::size_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        for (std::size_t j = 0; j < kBlock; ++j)
          p[2 + j] = std::uint8_t(std::int8_t(std::lround(src[j] * id)));
      }
      return;
    case TensorType::kQ4_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        // The value of largest magnitude, sign kept, maps to -8: the full range [-8, 7] is used.
        float amax = 0.0f, max = 0.0f;
        for (std::size_t j = 0; j < kBlock; ++j) {
          if (std::fabs(src[j]) > amax) {
            amax = std::fabs(src[j]);
            max = src[j];
          }
        }
        const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        auto q = [&](float x) { return std::min(15, int(std::int8_t(x * id + 8.5f))); };
        for (std::size_t j = 0; j < kBlock / 2; ++j)
          p[2 + j] = std::uint8_t(q(src[j]) | (q(src[j + kBlock / 2]) << 4));
      }
      return;
    case TensorType::kQ4_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        float lo = src[0], hi = src[0];
        for (std::size_t j = 1; j < kBlock; ++j) {
          lo = std::min(lo, src[j]);
          hi = std::max(hi, src[j]);
        }
        const float d = (hi - lo) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        store_half(p + 2, lo);
        auto q = [&](float x) { return std::min(15, int(std::int8_t((x - lo) * id + 0.5f))); };
        for (std::size_t j = 0; j < kBlock / 2; ++j)
          p[4 + j] = std::uint8_t(q(src[j]) | (q(src[j + kBlock / 2]) << 4));
      }
      return;
  }
}

}  // namespace inferlab::kernels
