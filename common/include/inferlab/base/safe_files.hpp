#pragma once
/// @file safe_files.hpp
/// @brief Reading input files and writing output files so that a hostile path can neither hang,
/// exhaust memory nor leave half a file behind.
///
/// Inputs: only regular files are opened (a FIFO with no writer would block open() forever,
/// `/dev/zero` would be read forever, a directory or a symlink loop gives an unclear error), and
/// reads are bounded. Outputs: every output path is checked before the run, and written to a
/// temporary file beside it that is renamed over the path only once it is complete, so a failed
/// write (disk full, file-size limit) leaves the old file, or none, never a truncated one.

#include <cstddef>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

namespace inferlab {

/// @brief Throws unless @p path names a regular file (symlinks followed) that can be opened
/// for reading.
/// @param path the file
/// @param what what the file is for, used as the start of the message (e.g. "model file",
/// "trace file"), as in `model file 'x.bin' is a FIFO (named pipe), not a regular file`
/// @throws inferlab::Error naming @p what, @p path and the reason (missing, directory, FIFO,
/// device, socket, symlink loop, permission denied).
void require_regular_file(const std::string& path, const std::string& what);

/// @brief Why @p path cannot be read as a regular file ("not found", "is a FIFO (named pipe),
/// not a regular file", "is a symlink loop ...", ...), or an empty string when it can.
std::string regular_file_problem(const std::string& path);

/// @brief Reads the whole of the regular file @p path, refusing anything larger than
/// @p max_bytes (checked from its size before reading, and again while reading).
/// @throws inferlab::Error as require_regular_file(), or if the file is larger than the limit
/// (the message names both sizes) or a read fails.
std::string read_regular_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes);

/// @brief Opens @p path for reading as text after require_regular_file(), without ever blocking
/// on a FIFO. @throws inferlab::Error as require_regular_file().
std::ifstream open_regular_file(const std::string& path, const std::string& what);

/// @brief Reads one line (without its '\n') of at most @p max_bytes bytes.
/// @return false at the end of the input (nothing read)
/// @throws inferlab::Error "line too long" (naming the limit) when a line is longer; the caller
/// prefixes the file and line.
bool read_bounded_line(std::istream& in, std::string& line, std::size_t max_bytes);

/// @brief Checks, before any work, that @p path can be written: its folder exists and accepts
/// a new file, and the path itself is not a directory or anything but a regular file.
/// @param path the output file
/// @param flag the flag that named it, for the message (e.g. "--plot")
/// @throws inferlab::Error naming @p flag, @p path and why, e.g.
/// `--plot 'out': folder 'out' not found`.
void require_writable_output(const std::string& path, const std::string& flag);

/// @brief An output file written atomically: the text goes to a temporary file in the same
/// folder, and commit() renames it over the path. Destroyed without commit() (an exception on
/// the way), it removes the temporary file and leaves the path as it was.
class OutputFile {
 public:
  /// @brief Creates the temporary file beside @p path. @throws inferlab::Error naming @p flag.
  OutputFile(std::string path, std::string flag);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// @brief Where to write the contents.
  std::ostream& stream() { return out_; }
  /// @brief Flushes, checks that every write succeeded, and renames the file into place.
  /// @throws inferlab::Error (the temporary file is removed) if any write or the rename failed.
  void commit();
  /// @brief The final path.
  const std::string& path() const { return path_; }

 private:
  std::string path_, flag_, temp_;
  std::ofstream out_;
  bool committed_ = false;
};

/// @brief Writes @p contents to @p path atomically (an OutputFile committed at once).
/// @throws inferlab::Error naming @p flag and the path.
void write_file_atomically(const std::string& path, std::string_view contents,
                           const std::string& flag);

}  // namespace inferlab
