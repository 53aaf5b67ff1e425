// Reading GGUF files: every count, length and offset checked against the file before use.
#include "inferlab/model/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr std::size_t kHeaderBytes = 24;  // magic, version, tensor count, metadata count
constexpr std::size_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;
// The fewest bytes one metadata entry (key length, type, a 1-byte value) and one tensor info
// (name length, dimension count, one dimension, type, offset) can take: the bound that keeps a
// hostile count from reserving more than the file could hold.
constexpr std::size_t kMinEntryBytes = 8 + 4 + 1;
constexpr std::size_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

// Bytes of one scalar of a fixed-size type; 0 for string and array.
std::size_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

bool known_type(std::uint32_t t) { return t <= std::uint32_t(GgufType::kF64); }

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// An integer of any GGUF integer type: its sign and magnitude.
struct Integer {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

Integer load_integer(GgufType t, const std::uint8_t* p) {
  auto from_signed = [](std::int64_t v) {
    return v < 0 ? Integer{true, std::uint64_t(0) - std::uint64_t(v)}
                 : Integer{false, std::uint64_t(v)};
  };
  switch (t) {
    case GgufType::kU8:
      return {false, load<std::uint8_t>(p)};
    case GgufType::kI8:
      return from_signed(load<std::int8_t>(p));
    case GgufType::kU16:
      return {false, load<std::uint16_t>(p)};
    case GgufType::kI16:
      return from_signed(load<std::int16_t>(p));
    case GgufType::kU32:
      return {false, load<std::uint32_t>(p)};
    case GgufType::kI32:
      return from_signed(load<std::int32_t>(p));
    case GgufType::kU64:
      return {false, load<std::uint64_t>(p)};
    case GgufType::kI64:
      return from_signed(load<std::int64_t>(p));
    default:
      return {};
  }
}

// A bounds-checked reader over the mapped bytes; `section` names what is being read, for the
// message when the file ends inside it.
class Cursor {
 public:
  Cursor(const std::uint8_t* base, std::size_t size, const std::string& path)
      : base_(base), size_(size), path_(path) {}
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return size_ - pos_; }
  void set_section(std::string section) { section_ = std::move(section); }
  Error fail(const std::string& what) const {
    return Error(fmt::format("cannot read GGUF file '{}': {}", path_, what));
  }
  const std::uint8_t* take(std::uint64_t n) {
    if (n > remaining()) {
      throw fail(
          fmt::format("the file is truncated: {} needs {} bytes at offset {}, but the "
                      "file ends at {}",
                      section_, n, pos_, size_));
    }
    const std::uint8_t* p = base_ + pos_;
    pos_ += std::size_t(n);
    return p;
  }
  template <class T>
  T read() {
    return load<T>(take(sizeof(T)));
  }
  // A string: its bytes as a view into the mapping.
  std::string_view read_string() {
    const auto n = read<std::uint64_t>();
    if (n > remaining()) {
      throw fail(
          fmt::format("{}: a string of {} bytes at offset {} is longer than the rest of "
                      "the file ({} bytes)",
                      section_, n, pos_ - 8, remaining()));
    }
    return {reinterpret_cast<const char*>(take(n)), std::size_t(n)};
  }

 private:
  const std::uint8_t* base_;
  std::size_t size_;
  std::size_t pos_ = 0;
  const std::string& path_;
  std::string section_ = "the header";
};

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kU8:
      return "u8";
    case GgufType::kI8:
      return "i8";
    case GgufType::kU16:
      return "u16";
    case GgufType::kI16:
      return "i16";
    case GgufType::kU32:
      return "u32";
    case GgufType::kI32:
      return "i32";
    case GgufType::kF32:
      return "f32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kU64:
      return "u64";
    case GgufType::kI64:
      return "i64";
    case GgufType::kF64:
      return "f64";
  }
  return "unknown";
}

std::string GgufTensor::describe() const {
  std::string dims;
  for (int i = 0; i < n_dims; ++i) dims += fmt::format("{}{}", i ? ", " : "", ne[std::size_t(i)]);
  return fmt::format("[{}] {}", dims, kernels::ggml_type_name(std::uint32_t(type)));
}

struct GgufFile::Mapping {
  void* base = nullptr;
  std::size_t bytes = 0;
  ~Mapping() {
    if (base) ::munmap(base, bytes);
  }
};

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

bool GgufFile::has_magic(const std::string& path) {
  if (!regular_file_problem(path).empty()) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4];
  const bool ok = ::pread(fd, magic, 4, 0) == 4 && std::memcmp(magic, kMagic, 4) == 0;
  ::close(fd);
  return ok;
}

GgufFile GgufFile::open(const std::string& path) {
  auto fail = [&](const std::string& what) {
    return Error(fmt::format("cannot read GGUF file '{}': {}", path, what));
  };
  // A FIFO, a device or a directory is refused before open(), which would block on a FIFO.
  if (const std::string why = regular_file_problem(path); !why.empty()) throw fail(why);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail("not a regular file");
  }
  const auto file_bytes = static_cast<std::size_t>(st.st_size);
  if (file_bytes < kHeaderBytes) {
    ::close(fd);
    throw fail(fmt::format("the file is {} bytes, shorter than the {}-byte GGUF header", file_bytes,
                           kHeaderBytes));
  }
  void* map = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping stays valid
  if (map == MAP_FAILED) throw fail(fmt::format("mmap failed: {}", std::strerror(errno)));
  GgufFile f;
  f.path_ = path;
  f.file_bytes_ = file_bytes;
  f.mapping_ = std::make_unique<Mapping>();
  f.mapping_->base = map;
  f.mapping_->bytes = file_bytes;
  const auto* base = static_cast<const std::uint8_t*>(map);

  Cursor in(base, file_bytes, f.path_);
  if (std::memcmp(in.take(4), kMagic, 4) != 0) {
    throw fail(
        fmt::format("not a GGUF file (it starts with bytes {:02x} {:02x} {:02x} {:02x}, "
                    "not \"GGUF\")",
                    base[0], base[1], base[2], base[3]));
  }
  f.version_ = in.read<std::uint32_t>();
  if (f.version_ != 2 && f.version_ != 3) {
    if ((f.version_ & 0xFFFFu) == 0 && f.version_ != 0)
      throw fail("big-endian GGUF files are not supported");
    throw fail(fmt::format("GGUF version {} is not supported (InferLab reads versions 2 and 3)",
                           f.version_));
  }
  const auto n_tensors = in.read<std::uint64_t>();
  const auto n_kv = in.read<std::uint64_t>();
  // Counts are checked against the bytes left before anything is reserved for them.
  if (n_kv > in.remaining() / kMinEntryBytes) {
    throw fail(
        fmt::format("the header announces {} metadata entries, more than the {} bytes "
                    "after it could hold",
                    n_kv, in.remaining()));
  }
  if (n_tensors > (in.remaining() - n_kv * kMinEntryBytes) / kMinTensorInfoBytes) {
    throw fail(
        fmt::format("the header announces {} tensors (and {} metadata entries), more "
                    "than the {} bytes after it could hold",
                    n_tensors, n_kv, in.remaining()));
  }

  f.metadata_.reserve(std::size_t(n_kv));
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    in.set_section(fmt::format("metadata entry {} of {}", i + 1, n_kv));
    const std::string_view key = in.read_string();
    in.set_section(fmt::format("metadata entry {} of {} ('{}')", i + 1, n_kv, key));
    if (f.key_index_.count(key)) throw fail(fmt::format("duplicate metadata key '{}'", key));
    const auto type = in.read<std::uint32_t>();
    if (!known_type(type))
      throw fail(fmt::format("metadata key '{}' has unknown value type {}", key, type));
    GgufValue v;
    v.key = std::string(key);
    v.type = GgufType(type);
    if (v.type == GgufType::kString) {
      const std::string_view s = in.read_string();
      v.data = reinterpret_cast<const std::uint8_t*>(s.data());
      v.bytes = s.size();
    } else if (v.type == GgufType::kArray) {
      const auto element = in.read<std::uint32_t>();
      if (!known_type(element)) {
        throw fail(
            fmt::format("metadata key '{}' is an array of unknown value type {}", key, element));
      }
      v.element_type = GgufType(element);
      if (v.element_type == GgufType::kArray)
        throw fail(fmt::format("metadata key '{}' is an array of arrays (not supported)", key));
      v.count = in.read<std::uint64_t>();
      const std::size_t start = in.pos();
      if (v.element_type == GgufType::kString) {
        if (v.count > in.remaining() / 8) {
          throw fail(
              fmt::format("metadata key '{}' announces {} strings, more than the {} "
                          "bytes left could hold",
                          key, v.count, in.remaining()));
        }
        for (std::uint64_t j = 0; j < v.count; ++j) in.read_string();
      } else {
        const std::size_t size = scalar_bytes(v.element_type);
        if (v.count > in.remaining() / size) {
          throw fail(
              fmt::format("metadata key '{}' announces {} {} elements, more than the {} "
                          "bytes left could hold",
                          key, v.count, gguf_type_name(v.element_type), in.remaining()));
        }
        in.take(v.count * size);
      }
      v.data = base + start;
      v.bytes = in.pos() - start;
    } else {
      v.bytes = scalar_bytes(v.type);
      v.data = in.take(v.bytes);
    }
    f.key_index_.emplace(key, f.metadata_.size());
    f.metadata_.push_back(std::move(v));
  }

  if (const GgufValue* a = f.find("general.alignment")) {
    if (!is_integer(a->type)) {
      throw fail(fmt::format("general.alignment is a {}, not an integer", gguf_type_name(a->type)));
    }
    const Integer value = load_integer(a->type, a->data);
    if (value.negative || value.magnitude == 0 || value.magnitude > (1u << 30) ||
        (value.magnitude & (value.magnitude - 1)) != 0) {
      throw fail(fmt::format("general.alignment {}{} is not a power of two in [1, 2^30]",
                             value.negative ? "-" : "", value.magnitude));
    }
    f.alignment_ = std::size_t(value.magnitude);
  }

  f.tensors_.reserve(std::size_t(n_tensors));
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    in.set_section(fmt::format("tensor info {} of {}", i + 1, n_tensors));
    const std::string_view name = in.read_string();
    in.set_section(fmt::format("tensor info {} of {} ('{}')", i + 1, n_tensors, name));
    if (f.tensor_index_.count(name)) throw fail(fmt::format("duplicate tensor name '{}'", name));
    GgufTensor t;
    t.name = std::string(name);
    const auto n_dims = in.read<std::uint32_t>();
    if (n_dims < 1 || n_dims > std::uint32_t(kMaxDims)) {
      throw fail(
          fmt::format("tensor '{}' has {} dimensions (1 to {} are valid)", name, n_dims, kMaxDims));
    }
    t.n_dims = int(n_dims);
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto ne = in.read<std::uint64_t>();
      // Every tensor must fit in the file, so no product of real dimensions comes near 2^62.
      if (ne == 0 || ne > (std::uint64_t(1) << 62) / elements) {
        throw fail(fmt::format("tensor '{}' has dimension {} = {} ({})", name, d, ne,
                               ne == 0 ? "empty" : "too large"));
      }
      t.ne[d] = ne;
      elements *= ne;
    }
    const auto type = in.read<std::uint32_t>();
    if (!kernels::is_supported_tensor_type(type)) {
      throw fail(
          fmt::format("tensor '{}' has type {}, which InferLab does not read "
                      "(supported: {})",
                      name, kernels::ggml_type_name(type), kernels::supported_tensor_types()));
    }
    t.type = kernels::TensorType(type);
    const std::size_t block = kernels::block_elements(t.type);
    if (t.ne[0] % block != 0) {
      throw fail(
          fmt::format("tensor '{}' ({}): its first dimension is not a multiple of the "
                      "{}-number block",
                      name, t.describe(), block));
    }
    t.n_elements = std::size_t(elements);
    t.n_bytes = kernels::tensor_bytes(t.type, t.n_elements);
    t.offset = in.read<std::uint64_t>();
    if (t.offset % f.alignment_ != 0) {
      throw fail(
          fmt::format("tensor '{}' starts at data offset {}, not a multiple of the "
                      "alignment {}",
                      name, t.offset, f.alignment_));
    }
    f.tensor_index_.emplace(name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment. A file without tensors (a
  // vocabulary-only file) may end before it.
  f.data_offset_ = (in.pos() + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  const std::size_t data_bytes = file_bytes > f.data_offset_ ? file_bytes - f.data_offset_ : 0;
  for (GgufTensor& t : f.tensors_) {
    if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
      throw fail(
          fmt::format("tensor '{}' ({}, {} bytes at file offset {}) runs past the end of "
                      "the file ({} bytes)",
                      t.name, t.describe(), t.n_bytes, f.data_offset_ + t.offset, file_bytes));
    }
    t.data = base + f.data_offset_ + t.offset;
  }
  std::vector<std::size_t> order(f.tensors_.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return f.tensors_[a].offset < f.tensors_[b].offset;
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const GgufTensor& prev = f.tensors_[order[i - 1]];
    const GgufTensor& t = f.tensors_[order[i]];
    if (t.offset < prev.offset + prev.n_bytes) {
      throw fail(fmt::format("tensors '{}' (data bytes [{}, {})) and '{}' (from {}) overlap",
                             prev.name, prev.offset, prev.offset + prev.n_bytes, t.name, t.offset));
    }
  }
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second];
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue& GgufFile::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(fmt::format("GGUF file '{}': metadata key '{}' is missing", path_, key));
  return *v;
}

namespace {

Error wrong_type(const std::string& path, const GgufValue& v, const char* expected) {
  const std::string actual = v.type == GgufType::kArray
                                 ? fmt::format("array of {}", gguf_type_name(v.element_type))
                                 : std::string(gguf_type_name(v.type));
  return Error(fmt::format("GGUF file '{}': metadata key '{}' is {} {}, expected {}", path, v.key,
                           v.type == GgufType::kArray ? "an" : "a", actual, expected));
}

// Converts an integer to T, or explains why it does not fit.
template <class T>
T integer_as(const Integer& value, const std::string& path, const std::string& key) {
  constexpr auto kMax = std::uint64_t(std::numeric_limits<T>::max());
  const bool fits = value.negative
                        ? std::numeric_limits<T>::is_signed && value.magnitude <= kMax + 1
                        : value.magnitude <= kMax;
  if (!fits) {
    throw Error(fmt::format("GGUF file '{}': metadata key '{}' holds {}{}, outside [{}, {}]", path,
                            key, value.negative ? "-" : "", value.magnitude,
                            std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  }
  return value.negative ? T(std::int64_t(0 - value.magnitude)) : T(value.magnitude);
}

}  // namespace

std::string_view GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kString) throw wrong_type(path_, v, "a string");
  return {reinterpret_cast<const char*>(v.data), v.bytes};
}

std::uint32_t GgufFile::get_u32(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) throw wrong_type(path_, v, "an integer");
  return integer_as<std::uint32_t>(load_integer(v.type, v.data), path_, v.key);
}

std::uint64_t GgufFile::get_u64(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) throw wrong_type(path_, v, "an integer");
  return integer_as<std::uint64_t>(load_integer(v.type, v.data), path_, v.key);
}

std::int64_t GgufFile::get_i64(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) throw wrong_type(path_, v, "an integer");
  return integer_as<std::int64_t>(load_integer(v.type, v.data), path_, v.key);
}

float GgufFile::get_f32(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type == GgufType::kF32) return load<float>(v.data);
  if (v.type == GgufType::kF64) return float(load<double>(v.data));
  throw wrong_type(path_, v, "a float");
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kBool) throw wrong_type(path_, v, "a bool");
  return v.data[0] != 0;
}

namespace {

template <class T>
std::vector<T> integer_array(const GgufValue& v, const std::string& path) {
  if (v.type != GgufType::kArray || !is_integer(v.element_type))
    throw wrong_type(path, v, "an array of integers");
  const std::size_t size = scalar_bytes(v.element_type);
  std::vector<T> out(std::size_t(v.count));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = integer_as<T>(load_integer(v.element_type, v.data + size * i), path, v.key);
  return out;
}

}  // namespace

template <class T>
std::vector<T> GgufFile::get_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if constexpr (std::is_same_v<T, std::string_view>) {
    if (v.type != GgufType::kArray || v.element_type != GgufType::kString)
      throw wrong_type(path_, v, "an array of string");
    std::vector<std::string_view> out;
    out.reserve(std::size_t(v.count));
    // The strings were bounds-checked when the file was opened.
    const std::uint8_t* p = v.data;
    for (std::uint64_t i = 0; i < v.count; ++i) {
      const auto n = std::size_t(load<std::uint64_t>(p));
      out.emplace_back(reinterpret_cast<const char*>(p + 8), n);
      p += 8 + n;
    }
    return out;
  } else if constexpr (std::is_same_v<T, float>) {
    if (v.type != GgufType::kArray ||
        (v.element_type != GgufType::kF32 && v.element_type != GgufType::kF64))
      throw wrong_type(path_, v, "an array of f32");
    std::vector<float> out(std::size_t(v.count));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = v.element_type == GgufType::kF32 ? load<float>(v.data + 4 * i)
                                                : float(load<double>(v.data + 8 * i));
    }
    return out;
  } else {
    return integer_array<T>(v, path_);
  }
}

template std::vector<std::string_view> GgufFile::get_array(std::string_view) const;
template std::vector<float> GgufFile::get_array(std::string_view) const;
template std::vector<std::int32_t> GgufFile::get_array(std::string_view) const;
template std::vector<std::int64_t> GgufFile::get_array(std::string_view) const;
template std::vector<std::uint32_t> GgufFile::get_array(std::string_view) const;
template std::vector<std::uint64_t> GgufFile::get_array(std::string_view) const;

}  // namespace inferlab
