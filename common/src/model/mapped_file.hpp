#pragma once
/// @file mapped_file.hpp
/// @brief A read-only memory mapping of a whole regular file (internal to common/src/model/):
/// what the llama2.c and GGUF loaders share.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "inferlab/base/error.hpp"

namespace inferlab {

/// @brief A whole file mapped read-only and private; unmapped when destroyed.
class MappedFile {
 public:
  /// @brief Maps @p path. A FIFO, a device or a directory is refused before open() (which
  /// would block on a FIFO). An empty file maps to nothing (data() null, size() 0).
  /// @param path the file
  /// @param fail builds the error thrown for a failure from its reason (the loader names the
  ///        file and its format)
  MappedFile(const std::string& path, const std::function<Error(const std::string&)>& fail);
  /// @brief Takes @p other's mapping; @p other maps nothing afterwards.
  MappedFile(MappedFile&& other) noexcept;
  /// @brief Unmaps this mapping and takes @p other's.
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// @brief The file's first byte (null for an empty file).
  const std::uint8_t* data() const { return static_cast<const std::uint8_t*>(base_); }
  /// @brief The file's size in bytes.
  std::size_t size() const { return bytes_; }

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace inferlab
