// The checks every binary's entry point shares (the command-line side is in app/cli_checks.cpp).
#include "inferlab/base/input_checks.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

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
    const auto b = static_cast<unsigned char>(text[i]);
    int len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b < 0x80)
      len = 1;
    else if (b >= 0xC2 && b <= 0xDF)
      len = 2;
    else if (b == 0xE0) {
      len = 3;
      lo = 0xA0;
    } else if (b == 0xED) {
      len = 3;
      hi = 0x9F;
    } else if (b >= 0xE1 && b <= 0xEF)
      len = 3;
    else if (b == 0xF0) {
      len = 4;
      lo = 0x90;
    } else if (b == 0xF4) {
      len = 4;
      hi = 0x8F;
    } else if (b >= 0xF1 && b <= 0xF3)
      len = 4;
    else
      return i;
    if (i + len > text.size()) return i;
    for (int k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (c < l || c > h) return i;
    }
    i += static_cast<std::size_t>(len);
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
