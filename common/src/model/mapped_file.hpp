#pragma once
// A read-only memory mapping of a whole regular file (internal to common/src/model/): what the
// llama2.c and GGUF loaders share.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "inferlab/base/error.hpp"

namespace inferlab {

class MappedFile {
 public:
  // Maps @p path read-only and private. A FIFO, a device or a directory is refused before
  // open() (which would block on a FIFO); any failure throws fail(reason). An empty file maps
  // to nothing (data() null, size() 0).
  MappedFile(const std::string& path, const std::function<Error(const std::string&)>& fail);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::uint8_t* data() const { return static_cast<const std::uint8_t*>(base_); }
  std::size_t size() const { return bytes_; }

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace inferlab
