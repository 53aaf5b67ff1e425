#pragma once
/// @file gguf_writer.hpp
/// @brief Writing GGUF version 3 files (the layout gguf.hpp describes): metadata of every value
/// type and tensors of every type InferLab reads, quantized from floats by the reference
/// quantizers of kernels/quant_formats.hpp. The tests make small random-weight models of every
/// variant with it; Model::save_gguf() writes a whole model.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/gguf.hpp"

namespace inferlab {

/// @brief Collects metadata and tensors, then lays them out as one GGUF v3 file.
class GgufWriter {
 public:
  /// @brief A writer whose tensors start at multiples of @p alignment (a power of two; a value
  /// other than 32 is recorded as `general.alignment`).
  /// @throws inferlab::Error if @p alignment is not a power of two.
  explicit GgufWriter(std::uint32_t alignment = 32);

  /// @brief Adds a string value. @throws inferlab::Error for a key already added.
  void add_string(std::string_view key, std::string_view value);
  /// @brief Adds a u32 value. @throws inferlab::Error for a key already added.
  void add_u32(std::string_view key, std::uint32_t value);
  /// @brief Adds an i32 value. @throws inferlab::Error for a key already added.
  void add_i32(std::string_view key, std::int32_t value);
  /// @brief Adds a u64 value. @throws inferlab::Error for a key already added.
  void add_u64(std::string_view key, std::uint64_t value);
  /// @brief Adds an f32 value. @throws inferlab::Error for a key already added.
  void add_f32(std::string_view key, float value);
  /// @brief Adds an f64 value. @throws inferlab::Error for a key already added.
  void add_f64(std::string_view key, double value);
  /// @brief Adds a bool value. @throws inferlab::Error for a key already added.
  void add_bool(std::string_view key, bool value);
  /// @brief Adds an array of strings. @throws inferlab::Error for a key already added.
  void add_string_array(std::string_view key, const std::vector<std::string>& values);
  /// @brief Adds an array of f32. @throws inferlab::Error for a key already added.
  void add_f32_array(std::string_view key, const std::vector<float>& values);
  /// @brief Adds an array of i32. @throws inferlab::Error for a key already added.
  void add_i32_array(std::string_view key, const std::vector<std::int32_t>& values);

  /// @brief Adds a tensor, quantizing @p values to @p type.
  /// @param name the tensor's name (unique)
  /// @param ne its dimensions, fastest first (1 to 4 of them; ne[0] a multiple of the type's
  ///        block size)
  /// @param type the storage type
  /// @param values the product of @p ne floats, row-major with ne[0] the row length
  /// @throws inferlab::Error for a duplicate name or an invalid shape.
  void add_tensor(std::string_view name, const std::vector<std::uint64_t>& ne,
                  kernels::TensorType type, const float* values);

  /// @brief The whole file's bytes.
  std::string bytes() const;
  /// @brief Writes bytes() to @p path (atomically: a failed write leaves no partial file).
  /// @throws inferlab::Error naming the path if it cannot be written.
  void write(const std::string& path) const;

 private:
  void add_key(std::string_view key, GgufType type);
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> ne;
    kernels::TensorType type;
    std::string data;
  };
  std::uint32_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::string metadata_;  // the serialized entries
  std::unordered_set<std::string> keys_, names_;
  std::vector<Tensor> tensors_;
};

}  // namespace inferlab
