#pragma once
/// @file gguf.hpp
/// @brief Reading GGUF files (versions 2 and 3, little-endian), the single-file model format of
/// llama.cpp: typed metadata (key -> value) and tensor descriptions, then the tensor data.
///
/// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; the metadata entries
/// (string key, u32 value type, value); the tensor infos (string name, u32 dimension count,
/// that many u64 dimensions `ne` listed fastest first, u32 ggml type, u64 offset); padding to
/// `general.alignment` (default 32); the tensor data, each tensor at its offset from the start
/// of that section. A string is a u64 length and that many bytes (no terminator).
///
/// The file is memory-mapped and every count, length, offset and size is checked against the
/// file before it is used, so a hostile file is refused with one inferlab::Error line naming
/// the file, never read past its end, and never makes the reader allocate more than the file
/// could describe. Values and tensor data are views into the mapping, valid while the GgufFile
/// lives (moves keep them valid).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inferlab/kernels/quant_formats.hpp"

namespace inferlab {

/// @brief The value types of GGUF metadata (numbered as in the file).
enum class GgufType : std::uint32_t {
  kU8 = 0,      ///< uint8
  kI8 = 1,      ///< int8
  kU16 = 2,     ///< uint16
  kI16 = 3,     ///< int16
  kU32 = 4,     ///< uint32
  kI32 = 5,     ///< int32
  kF32 = 6,     ///< float32
  kBool = 7,    ///< one byte, 0 or 1
  kString = 8,  ///< u64 length, then bytes
  kArray = 9,   ///< u32 element type, u64 count, then the elements
  kU64 = 10,    ///< uint64
  kI64 = 11,    ///< int64
  kF64 = 12     ///< float64
};

/// @brief The name of a metadata value type ("u32", "string", "array", ...).
const char* gguf_type_name(GgufType type);

/// @brief One metadata entry: its key, its type and where its value lies in the mapping.
struct GgufValue {
  std::string key;                        ///< e.g. "llama.block_count"
  GgufType type = GgufType::kU8;          ///< the value's type
  GgufType element_type = GgufType::kU8;  ///< for an array: its elements' type
  std::uint64_t count = 0;                ///< for an array: its element count
  const std::uint8_t* data = nullptr;     ///< the value's bytes (an array's first element)
  std::size_t bytes = 0;                  ///< bytes of the value (all elements for an array)
};

/// @brief One tensor: its description and a view of its bytes in the mapping.
struct GgufTensor {
  std::string name;                             ///< e.g. "blk.0.attn_q.weight"
  int n_dims = 0;                               ///< 1 to 4
  std::array<std::uint64_t, 4> ne{1, 1, 1, 1};  ///< dimensions, fastest first (unused ones 1)
  kernels::TensorType type = kernels::TensorType::kF32;  ///< storage type
  std::uint64_t offset = 0;                              ///< from the start of the data section
  std::size_t n_elements = 0;                            ///< product of the dimensions
  std::size_t n_bytes = 0;                               ///< bytes of data
  const std::uint8_t* data = nullptr;                    ///< n_bytes bytes in the mapping
  /// @brief "[576, 49152] Q8_0": dimensions and type, for messages.
  std::string describe() const;
};

/// @brief A GGUF file, memory-mapped, with its metadata and tensors parsed and checked.
class GgufFile {
 public:
  /// @brief Whether the file at @p path starts with the GGUF magic (false if it cannot be
  /// read or is shorter than 4 bytes): how loaders tell GGUF from other formats.
  static bool has_magic(const std::string& path);

  /// @brief Maps and parses @p path.
  /// @throws inferlab::Error naming the file and the problem (not a regular file, wrong magic,
  /// unsupported version, truncated at a named section, a count or string length larger than
  /// the file, an unknown value type, a duplicate key or tensor name, a bad alignment, a
  /// tensor with a bad dimension count or an unsupported type (named), a tensor whose data is
  /// misaligned, runs past the end of the file or overlaps another).
  static GgufFile open(const std::string& path);

  /// @brief The file's path, as given to open().
  const std::string& path() const { return path_; }
  /// @brief The format version (2 or 3).
  std::uint32_t version() const { return version_; }
  /// @brief `general.alignment`, or 32 when absent.
  std::size_t alignment() const { return alignment_; }
  /// @brief Byte offset of the data section in the file.
  std::size_t data_offset() const { return data_offset_; }
  /// @brief Size of the file in bytes.
  std::size_t file_bytes() const { return file_bytes_; }

  /// @brief Every metadata entry, in file order.
  const std::vector<GgufValue>& metadata() const { return metadata_; }
  /// @brief Every tensor, in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  /// @brief The entry for @p key, or nullptr.
  const GgufValue* find(std::string_view key) const;
  /// @brief The tensor named @p name, or nullptr.
  const GgufTensor* find_tensor(std::string_view name) const;

  /// @brief A string value (a view into the mapping).
  /// @throws inferlab::Error naming the file and key if it is missing or not a string.
  std::string_view get_string(std::string_view key) const;
  /// @brief An integer value of any integer type that fits in uint32.
  /// @throws inferlab::Error if it is missing, not an integer, negative or too large.
  std::uint32_t get_u32(std::string_view key) const;
  /// @brief An integer value of any integer type that fits in uint64.
  /// @throws inferlab::Error if it is missing, not an integer or negative.
  std::uint64_t get_u64(std::string_view key) const;
  /// @brief An integer value of any integer type that fits in int64.
  /// @throws inferlab::Error if it is missing, not an integer or too large.
  std::int64_t get_i64(std::string_view key) const;
  /// @brief A float32 or float64 value, as float.
  /// @throws inferlab::Error if it is missing or not a float.
  float get_f32(std::string_view key) const;
  /// @brief A bool value.
  /// @throws inferlab::Error if it is missing or not a bool.
  bool get_bool(std::string_view key) const;

  /// @brief The elements of an array value as @p T: std::string_view (views into the mapping)
  /// for a string array; float for f32/f64; std::int32_t, std::int64_t, std::uint32_t or
  /// std::uint64_t for integer arrays (each element must fit).
  /// @throws inferlab::Error if the key is missing, not an array, or holds another type.
  template <class T>
  std::vector<T> get_array(std::string_view key) const;

  /// @brief Move-only: the mapping moves with the object; views stay valid.
  GgufFile(GgufFile&&) noexcept;
  /// @brief Move assignment: unmaps this file, then takes over the other's mapping.
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

 private:
  GgufFile() = default;
  struct Mapping;
  const GgufValue& require(std::string_view key) const;
  std::string path_;
  std::uint32_t version_ = 0;
  std::size_t alignment_ = 32;
  std::size_t data_offset_ = 0;
  std::size_t file_bytes_ = 0;
  std::vector<GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  // Keys and names as views of their bytes in the mapping, which never move.
  std::unordered_map<std::string_view, std::size_t> key_index_, tensor_index_;
  std::unique_ptr<Mapping> mapping_;
};

}  // namespace inferlab
