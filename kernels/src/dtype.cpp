// Number formats: sizes, names, and which ones the KV storage implements.
#include "inferlab/kernels/dtype.hpp"

#include "inferlab/kernels/error.hpp"

namespace inferlab {

namespace {
// "f32, f16 or int8": the implemented KV storage types, for error messages.
std::string kv_storage_list() {
  const std::vector<DType> types = kv_storage_dtypes();
  std::string s;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i > 0) s += i + 1 == types.size() ? " or " : ", ";
    s += dtype_name(types[i]);
  }
  return s;
}
}  // namespace

double dtype_bytes(DType type) {
  switch (type) {
    case DType::f32:
      return 4.0;
    case DType::f16:
    case DType::bf16:
      return 2.0;
    case DType::fp8:
    case DType::int8:
      return 1.0;
    case DType::int4:
      return 0.5;  // two numbers per byte
  }
  return 0.0;
}

const char* dtype_name(DType type) {
  switch (type) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::fp8:
      return "fp8";
    case DType::int8:
      return "int8";
    case DType::int4:
      return "int4";
  }
  return "?";
}

std::vector<DType> all_dtypes() {
  return {DType::f32, DType::f16, DType::bf16, DType::fp8, DType::int8, DType::int4};
}

DType parse_dtype(const std::string& name) {
  for (DType t : all_dtypes())
    if (name == dtype_name(t)) return t;
  if (name == "fp32" || name == "float32") return DType::f32;
  if (name == "fp16" || name == "float16") return DType::f16;
  if (name == "bfloat16") return DType::bf16;
  throw Error("unknown number format '" + name + "'; known: f32, f16, bf16, fp8, int8, int4");
}

bool kv_storage_supported(DType type) {
  return type == DType::f32 || type == DType::f16 || type == DType::int8;
}

std::vector<DType> kv_storage_dtypes() { return {DType::f32, DType::f16, DType::int8}; }

void require_kv_storage(DType type, const char* where) {
  if (!kv_storage_supported(type))
    throw Error(std::string(where) + ": KV storage type '" + dtype_name(type) +
                "' is not implemented (" + kv_storage_list() + ")");
}

DType parse_kv_dtype(const std::string& name) {
  DType type;
  try {
    type = parse_dtype(name);
  } catch (const Error&) {
    throw Error("unknown KV cache type '" + name + "' (choose " + kv_storage_list() + ")");
  }
  if (!kv_storage_supported(type))
    throw Error("KV cache type '" + name + "' is not implemented (choose " + kv_storage_list() +
                ")");
  return type;
}

}  // namespace inferlab
