// Read-only memory mappings of regular files.
#include "mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/safe_files.hpp"

namespace inferlab {

MappedFile::MappedFile(const std::string& path,
                       const std::function<Error(const std::string&)>& fail) {
  if (const std::string why = regular_file_problem(path); !why.empty()) throw fail(why);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail("not a regular file");
  }
  bytes_ = static_cast<std::size_t>(st.st_size);
  if (bytes_ > 0) {
    base_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base_ == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      base_ = nullptr;
      throw fail(fmt::format("mmap failed: {}", std::strerror(err)));
    }
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (base_) ::munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (base_) ::munmap(base_, bytes_);
}

}  // namespace inferlab
