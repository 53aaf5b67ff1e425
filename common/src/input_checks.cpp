// The checks every binary's entry point shares.
#include "inferlab/input_checks.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "inferlab/error.hpp"

namespace inferlab {

namespace {

// A message printed as one line: newlines become "; ".
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      out += "; ";
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

}  // namespace

int max_threads() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return kThreadsPerCore * static_cast<int>(hw);
}

CLI::Validator integer_in(long long lo, long long hi, const std::string& why) {
  const std::string range = fmt::format("[{}, {}]{}", lo, hi, why.empty() ? "" : " (" + why + ")");
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc::result_out_of_range)
          return fmt::format("{} is outside {}", text, range);
        if (ec != std::errc() || ptr != end || text.empty())
          return fmt::format("'{}' is not an integer (expected one in {})", text, range);
        if (v < lo || v > hi) return fmt::format("{} is outside {}", text, range);
        return {};
      },
      "INT in " + range);
}

CLI::Validator thread_count() {
  return integer_in(0, max_threads(),
                    fmt::format("0 = OpenMP's default; at most {} x the {} hardware threads",
                                kThreadsPerCore, max_threads() / kThreadsPerCore));
}

CLI::Validator finite_in(double lo, double hi, bool lo_open, bool hi_open) {
  const std::string range =
      fmt::format("{}{:g}, {:g}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size())
          return fmt::format("'{}' is not a number (expected one in {})", text, range);
        if (!std::isfinite(v)) return fmt::format("{} is not a finite number (expected one in {})", text, range);
        const bool below = lo_open ? !(v > lo) : !(v >= lo);
        const bool above = hi_open ? !(v < hi) : !(v <= hi);
        if (below || above) return fmt::format("{} is outside {}", text, range);
        // A value so small it rounds to a subnormal is refused too: it only produces infinities.
        if (v != 0.0 && std::fpclassify(v) == FP_SUBNORMAL)
          return fmt::format("{} is too close to 0 (a subnormal number)", text);
        return {};
      },
      "FLOAT in " + range);
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (!digits || ec != std::errc() || ptr != end)
          return fmt::format("'{}' is not an integer in [0, 18446744073709551615]", text);
        return {};
      },
      "UINT64");
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
    throw Error(fmt::format("{} needs {} ({:.0f} bytes), more than the {} of memory this process "
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
    if (b < 0x80) len = 1;
    else if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) { len = 3; lo = 0xA0; }
    else if (b == 0xED) { len = 3; hi = 0x9F; }
    else if (b >= 0xE1 && b <= 0xEF) len = 3;
    else if (b == 0xF0) { len = 4; lo = 0x90; }
    else if (b == 0xF4) { len = 4; hi = 0x8F; }
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    else return i;
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

int run_main(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "error: %s (see --help)\n", one_line(e.what()).c_str());
    return 2;
  }
  const char* failure = nullptr;
  std::string message;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    failure = "out of memory: an allocation failed (std::bad_alloc)";
  } catch (const std::exception& e) {
    message = one_line(e.what());
  } catch (...) {
    failure = "an unknown exception";
  }
  std::fflush(stdout);  // what was printed so far stays above the error
  // On a terminal, text streamed so far may end mid-line: the error starts a line of its own.
  if (::isatty(STDOUT_FILENO) && ::isatty(STDERR_FILENO)) std::fputc('\n', stderr);
  std::fprintf(stderr, "error: %s\n", failure ? failure : message.c_str());
  return 1;
}

}  // namespace inferlab
