// The checks every binary's entry point shares (the command-line side is in app/cli_checks.cpp).
#include "inferlab/base/input_checks.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/utf8.hpp"

namespace inferlab {

namespace {

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

}  // namespace

int max_threads() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return kThreadsPerCore * static_cast<int>(hw);
}

std::uint64_t memory_limit_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t limit = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page)
                                              : std::numeric_limits<std::uint64_t>::max();
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      limit = std::min<std::uint64_t>(limit, rl.rlim_cur);
  }
  return limit;
}

void require_allocation(double bytes, const std::string& what) {
  const double limit = static_cast<double>(memory_limit_bytes());
  if (!(bytes <= limit)) {
    throw Error(
        fmt::format("{} needs {} ({:.0f} bytes), more than the {} of memory this process "
                    "may use",
                    what, gigabytes(bytes), bytes, gigabytes(limit)));
  }
}

std::size_t invalid_utf8_offset(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const Utf8Char c = decode_utf8(text, i);
    if (c.length == 0) return i;
    i += static_cast<std::size_t>(c.length);
  }
  return std::string_view::npos;
}

void require_utf8(std::string_view text, const std::string& what) {
  const std::size_t at = invalid_utf8_offset(text);
  if (at != std::string_view::npos) {
    throw Error(fmt::format("{} is not valid UTF-8 (byte {}: 0x{:02X})", what, at,
                            static_cast<unsigned char>(text[at])));
  }
}

}  // namespace inferlab
