// Rungs 2 and 3 of the quantized matmul with x86 SIMD: quant_dot_x86.inc compiled for AVX2 and
// for AVX-512 VNNI by `#pragma GCC target`, so the library builds for any -march (x86-64-v2
// included) and matmul_quant picks the path at run time (quant_isa_supported).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "quant_dot.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define INFERLAB_QDOT_X86 1
#else
#define INFERLAB_QDOT_X86 0
#endif

namespace inferlab::kernels::quant_dot {

#if INFERLAB_QDOT_X86

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define INFERLAB_QDOT_VNNI 0
#include "quant_dot_x86.inc"
#undef INFERLAB_QDOT_VNNI
}  // namespace avx2
#pragma GCC pop_options

// GCC 12's AVX-512 intrinsics pass an undefined register (`__m512i __Y = __Y;`) that its own
// -Wuninitialized and -Wmaybe-uninitialized report once inlined (gcc.gnu.org bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
namespace vnni {
#define INFERLAB_QDOT_VNNI 1
#include "quant_dot_x86.inc"
#undef INFERLAB_QDOT_VNNI
}  // namespace vnni
#pragma GCC pop_options
#pragma GCC diagnostic pop

RowDot row_dot_avx2(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return avx2::row_dot_any<avx2::Q8_0>;
    case TensorType::kQ4_0:
      return avx2::row_dot_any<avx2::Q4_0>;
    case TensorType::kQ4_1:
      return avx2::row_dot_any<avx2::Q4_1>;
    case TensorType::kQ5_0:
      return avx2::row_dot_any<avx2::Q5_0>;
    case TensorType::kQ5_1:
      return avx2::row_dot_any<avx2::Q5_1>;
    default:
      return nullptr;
  }
}

RowDot row_dot_avx512_vnni(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return vnni::row_dot_any<vnni::Q8_0>;
    case TensorType::kQ4_0:
      return vnni::row_dot_any<vnni::Q4_0>;
    case TensorType::kQ4_1:
      return vnni::row_dot_any<vnni::Q4_1>;
    case TensorType::kQ5_0:
      return vnni::row_dot_any<vnni::Q5_0>;
    case TensorType::kQ5_1:
      return vnni::row_dot_any<vnni::Q5_1>;
    default:
      return nullptr;
  }
}

RowDotK row_dot_k_avx2(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K:
      return avx2::row_dot_any<avx2::Q4_K>;
    case TensorType::kQ6_K:
      return avx2::row_dot_any<avx2::Q6_K>;
    default:
      return nullptr;
  }
}

RowDotK row_dot_k_avx512_vnni(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K:
      return vnni::row_dot_any<vnni::Q4_K>;
    case TensorType::kQ6_K:
      return vnni::row_dot_any<vnni::Q6_K>;
    default:
      return nullptr;
  }
}

RowDotF row_dot_f_avx2(TensorType type) {
  switch (type) {
    case TensorType::kF16:
      return avx2::row_dot_any<avx2::F16>;
    case TensorType::kBF16:
      return avx2::row_dot_any<avx2::BF16>;
    default:
      return nullptr;
  }
}

RowDotF row_dot_f_avx512_vnni(TensorType type) {
  switch (type) {
    case TensorType::kF16:
      return vnni::row_dot_any<vnni::F16>;
    case TensorType::kBF16:
      return vnni::row_dot_any<vnni::BF16>;
    default:
      return nullptr;
  }
}

#else

RowDotF row_dot_f_avx2(TensorType) { return nullptr; }
RowDotF row_dot_f_avx512_vnni(TensorType) { return nullptr; }
RowDot row_dot_avx2(TensorType) { return nullptr; }
RowDot row_dot_avx512_vnni(TensorType) { return nullptr; }
RowDotK row_dot_k_avx2(TensorType) { return nullptr; }
RowDotK row_dot_k_avx512_vnni(TensorType) { return nullptr; }

#endif

}  // namespace inferlab::kernels::quant_dot
