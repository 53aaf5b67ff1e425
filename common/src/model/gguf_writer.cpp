// Writing GGUF v3 files.
#include "inferlab/model/gguf_writer.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

namespace {

constexpr std::uint32_t kVersion = 3;
constexpr std::uint32_t kDefaultAlignment = 32;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put_string(std::string& out, std::string_view s) {
  put<std::uint64_t>(out, s.size());
  out.append(s);
}

}  // namespace

GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw Error(fmt::format("GGUF alignment {} is not a power of two", alignment));
  if (alignment != kDefaultAlignment) add_u32("general.alignment", alignment);
}

void GgufWriter::add_key(std::string_view key, GgufType type) {
  if (!keys_.emplace(key).second)
    throw Error(fmt::format("GGUF writer: metadata key '{}' added twice", key));
  ++n_kv_;
  put_string(metadata_, key);
  put<std::uint32_t>(metadata_, std::uint32_t(type));
}

void GgufWriter::add_string(std::string_view key, std::string_view value) {
  add_key(key, GgufType::kString);
  put_string(metadata_, value);
}

void GgufWriter::add_u32(std::string_view key, std::uint32_t value) {
  add_key(key, GgufType::kU32);
  put(metadata_, value);
}

void GgufWriter::add_i32(std::string_view key, std::int32_t value) {
  add_key(key, GgufType::kI32);
  put(metadata_, value);
}

void GgufWriter::add_u64(std::string_view key, std::uint64_t value) {
  add_key(key, GgufType::kU64);
  put(metadata_, value);
}

void GgufWriter::add_f32(std::string_view key, float value) {
  add_key(key, GgufType::kF32);
  put(metadata_, value);
}

void GgufWriter::add_f64(std::string_view key, double value) {
  add_key(key, GgufType::kF64);
  put(metadata_, value);
}

void GgufWriter::add_bool(std::string_view key, bool value) {
  add_key(key, GgufType::kBool);
  put<std::uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::add_string_array(std::string_view key, const std::vector<std::string>& values) {
  add_key(key, GgufType::kArray);
  put<std::uint32_t>(metadata_, std::uint32_t(GgufType::kString));
  put<std::uint64_t>(metadata_, values.size());
  for (const std::string& s : values) put_string(metadata_, s);
}

void GgufWriter::add_f32_array(std::string_view key, const std::vector<float>& values) {
  add_key(key, GgufType::kArray);
  put<std::uint32_t>(metadata_, std::uint32_t(GgufType::kF32));
  put<std::uint64_t>(metadata_, values.size());
  for (float v : values) put(metadata_, v);
}

void GgufWriter::add_i32_array(std::string_view key, const std::vector<std::int32_t>& values) {
  add_key(key, GgufType::kArray);
  put<std::uint32_t>(metadata_, std::uint32_t(GgufType::kI32));
  put<std::uint64_t>(metadata_, values.size());
  for (std::int32_t v : values) put(metadata_, v);
}

void GgufWriter::add_tensor(std::string_view name, const std::vector<std::uint64_t>& ne,
                            kernels::TensorType type, const float* values) {
  if (ne.empty() || ne.size() > 4)
    throw Error(fmt::format("GGUF writer: tensor '{}' has {} dimensions", name, ne.size()));
  std::size_t n = 1;
  for (std::uint64_t d : ne) n *= std::size_t(d);
  if (ne[0] % kernels::block_elements(type) != 0) {
    throw Error(fmt::format("GGUF writer: tensor '{}' rows of {} do not split into {} blocks", name,
                            ne[0], kernels::ggml_type_name(std::uint32_t(type))));
  }
  if (!names_.emplace(name).second)
    throw Error(fmt::format("GGUF writer: tensor '{}' added twice", name));
  Tensor t{std::string(name), ne, type, std::string(kernels::tensor_bytes(type, n), '\0')};
  kernels::quantize_ref(type, values, t.data.data(), n);
  tensors_.push_back(std::move(t));
}

std::string GgufWriter::bytes() const {
  std::string out;
  out.append("GGUF", 4);
  put<std::uint32_t>(out, kVersion);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, n_kv_);
  out += metadata_;
  auto padded = [&](std::size_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, std::uint32_t(t.ne.size()));
    for (std::uint64_t d : t.ne) put(out, d);
    put<std::uint32_t>(out, std::uint32_t(t.type));
    put(out, offset);
    offset = padded(offset + t.data.size());
  }
  out.resize(padded(out.size()), '\0');
  for (const Tensor& t : tensors_) {
    out += t.data;
    out.resize(padded(out.size()), '\0');
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  write_file_atomically(path, bytes(), "GGUF file");
}

}  // namespace inferlab
