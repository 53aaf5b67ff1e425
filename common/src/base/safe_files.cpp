// Reading inputs that might be anything, and writing outputs all or nothing.
#include "inferlab/base/safe_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// What a non-regular file is, for the message.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string stat_failure(int err) {
  switch (err) {
    case ENOENT:
      return "not found";
    case ELOOP:
      return "is a symlink loop (too many levels of symbolic links)";
    case EACCES:
      return "permission denied";
    case ENAMETOOLONG:
      return "the path is too long";
    case ENOTDIR:
      return "a component of the path is not a directory";
    default:
      return std::strerror(err);
  }
}

// The folder an output file goes into ("." for a bare name).
std::string folder_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

std::string regular_file_problem(const std::string& path) {
  if (path.empty()) return "is an empty path";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return stat_failure(errno);
  if (!S_ISREG(st.st_mode)) return fmt::format("is {}, not a regular file", file_kind(st.st_mode));
  if (::access(path.c_str(), R_OK) != 0) return "cannot be read: " + stat_failure(errno);
  return {};
}

void require_regular_file(const std::string& path, const std::string& what) {
  const std::string why = regular_file_problem(path);
  if (!why.empty()) throw Error(fmt::format("{} '{}' {}", what, path, why));
}

std::string read_regular_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes) {
  require_regular_file(path, what);
  // O_NONBLOCK: should the path have become a FIFO since the check, open() returns at once.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("{} '{}' cannot be opened: {}", what, path, stat_failure(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{} '{}' is not a regular file", what, path));
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(fmt::format("{} '{}' is {} bytes, more than the limit of {} bytes", what, path,
                            static_cast<long long>(st.st_size), max_bytes));
  }
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (true) {
    if (done == bytes.size()) {
      // The file may have grown since fstat: read on, up to the limit.
      if (bytes.size() >= max_bytes + 1) break;
      bytes.resize(std::min(max_bytes + 1, std::max<std::size_t>(4096, bytes.size() * 2)));
    }
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(fmt::format("{} '{}': read failed: {}", what, path, std::strerror(err)));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done > max_bytes) {
    throw Error(fmt::format("{} '{}' is more than the limit of {} bytes", what, path, max_bytes));
  }
  bytes.resize(done);
  return bytes;
}

std::ifstream open_regular_file(const std::string& path, const std::string& what) {
  require_regular_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{} '{}' cannot be opened", what, path));
  return in;
}

bool read_bounded_line(std::istream& in, std::string& line, std::size_t max_bytes) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  while (true) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (c == '\n') return true;
    if (line.size() >= max_bytes) {
      throw Error(fmt::format("line longer than the limit of {} bytes", max_bytes));
    }
    line.push_back(static_cast<char>(c));
  }
}

void require_writable_output(const std::string& path, const std::string& flag) {
  if (path.empty()) throw Error(fmt::format("{}: empty path", flag));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      throw Error(fmt::format("{} '{}' is {}: give the path of a file to write", flag, path,
                              file_kind(st.st_mode)));
    }
    if (::access(path.c_str(), W_OK) != 0) {
      throw Error(
          fmt::format("{} '{}' cannot be overwritten: {}", flag, path, stat_failure(errno)));
    }
  } else if (errno != ENOENT) {
    throw Error(fmt::format("{} '{}' {}", flag, path, stat_failure(errno)));
  }
  const std::string folder = folder_of(path);
  if (::stat(folder.c_str(), &st) != 0) {
    throw Error(fmt::format("{} '{}': folder '{}' {}", flag, path, folder, stat_failure(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(fmt::format("{} '{}': '{}' is not a folder", flag, path, folder));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw Error(fmt::format("{} '{}': folder '{}' is not writable: {}", flag, path, folder,
                            stat_failure(errno)));
  }
}

OutputFile::OutputFile(std::string path, std::string flag)
    : path_(std::move(path)), flag_(std::move(flag)) {
  require_writable_output(path_, flag_);
  // The temporary file lives in the same folder, so the final rename() is atomic.
  std::vector<char> name(path_.begin(), path_.end());
  const std::string suffix = ".tmp.XXXXXX";
  name.insert(name.end(), suffix.begin(), suffix.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error(fmt::format("{} '{}': cannot create a file beside it: {}", flag_, path_,
                            std::strerror(errno)));
  }
  ::close(fd);
  temp_ = name.data();
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    std::remove(temp_.c_str());
    throw Error(fmt::format("{} '{}': cannot open a file beside it", flag_, path_));
  }
}

OutputFile::~OutputFile() {
  if (!committed_) {
    out_.close();
    std::remove(temp_.c_str());
  }
}

void OutputFile::commit() {
  if (committed_) return;
  out_.flush();
  const bool written = static_cast<bool>(out_);
  out_.close();
  if (!written || out_.fail()) {
    std::remove(temp_.c_str());
    committed_ = true;  // nothing left to clean up
    throw Error(
        fmt::format("{} '{}': the write failed (disk full or file-size limit?); the file "
                    "was left as it was",
                    flag_, path_));
  }
  // mkstemp creates the file 0600; an output is an ordinary file, readable as the umask allows.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp_.c_str(), 0666 & ~mask);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    committed_ = true;
    throw Error(fmt::format("{} '{}': cannot move the finished file into place: {}", flag_, path_,
                            std::strerror(err)));
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view contents,
                           const std::string& flag) {
  OutputFile file(path, flag);
  file.stream().write(contents.data(), static_cast<std::streamsize>(contents.size()));
  file.commit();
}

}  // namespace inferlab
