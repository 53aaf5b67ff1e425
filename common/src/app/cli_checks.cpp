// The command-line side of the checks every binary's entry point shares.
#include "inferlab/app/cli_checks.hpp"

#include "inferlab/base/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>

#include <fmt/format.h>

namespace inferlab {

namespace {

// A message printed as one line: newlines become "; ", and other control bytes (a terminal
// escape sequence quoted from an input) are written as \xNN.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "; ";
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

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
        if (!std::isfinite(v))
          return fmt::format("{} is not a finite number (expected one in {})", text, range);
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

void refuse_inapplicable_flags(const CLI::App& app, const std::vector<FlagScope>& scopes) {
  for (const FlagScope& s : scopes) {
    if (s.applies || app.count(s.flag) == 0) continue;
    std::string line = s.flag;
    if (!s.why.empty()) line += " " + s.why + ": it";
    if (s.where.empty())
      line += " does not apply to " + s.mode;
    else
      line += " applies only " + s.where + (s.mode.empty() ? "" : ", not " + s.mode);
    throw Error(line);
  }
}

namespace {
std::map<std::string, std::string>& parameter_flags() {
  static std::map<std::string, std::string> table;
  return table;
}
}  // namespace

void set_parameter_flag(const std::string& parameter, const std::string& flag) {
  parameter_flags()[parameter] = flag;
}

std::string flag_for_parameter(const CLI::App* app, const std::string& parameter) {
  std::string flag = "--" + parameter;
  std::replace(flag.begin(), flag.end(), '_', '-');
  const bool declared = app != nullptr && app->get_option_no_throw(flag) != nullptr;
  if (!declared) {
    const auto it = parameter_flags().find(parameter);
    if (it != parameter_flags().end()) return it->second;
  }
  return flag;
}

std::string flag_error_message(const CLI::App* app, const std::exception& e) {
  if (const auto* p = dynamic_cast<const ParameterError*>(&e))
    return one_line(flag_for_parameter(app, p->parameter()) + " " + p->problem());
  return one_line(e.what());
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
    message = flag_error_message(&app, e);
  } catch (...) {
    failure = "an unknown exception";
  }
  std::fflush(stdout);  // what was printed so far stays above the error
  // On a terminal, text streamed so far may end mid-line: the error starts a line of its own.
  if (::isatty(STDOUT_FILENO) && ::isatty(STDERR_FILENO)) std::fputc('\n', stderr);
  const std::string line = failure ? std::string(failure) : message;
  std::fprintf(stderr, "error: ");
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
  return 1;
}

}  // namespace inferlab
