#pragma once
/// @file input_checks.hpp
/// @brief Checks every entry point shares, so that each input is refused before any work starts
/// with one line naming the flag and the limit: CLI11 validators for numeric flags (NaN and
/// infinity refused, 64-bit seeds read in full), the bound on threads, allocation sizes checked
/// against the machine's memory before trying, UTF-8 validation, and the guard every `main`
/// runs its body in.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace inferlab {

/// @brief The largest --threads any binary accepts: kThreadsPerCore x the hardware threads.
/// OpenMP creates that many threads, each with its own stack; far more than the machine has
/// only slows a run down, and tens of thousands crash inside the runtime.
int max_threads();

/// @brief How many times the hardware threads --threads may ask for.
inline constexpr int kThreadsPerCore = 4;

/// @brief Validator for an integer flag in [@p lo, @p hi]: refuses text that is not an integer
/// ("nan", "1e3", "1.5") and values outside, naming the range, e.g.
/// `--reps: 2147483647 is outside [1, 1000]`. @p why, if not empty, follows the range.
CLI::Validator integer_in(long long lo, long long hi, const std::string& why = "");

/// @brief Validator for --threads: an integer in [0, max_threads()] (0 = OpenMP's default).
CLI::Validator thread_count();

/// @brief Validator for a real flag in [@p lo, @p hi] (or the open bound where @p lo_open /
/// @p hi_open): NaN and infinities are refused as "not a finite number".
CLI::Validator finite_in(double lo, double hi, bool lo_open = false, bool hi_open = false);

/// @brief Validator for a full 64-bit unsigned flag (a seed): decimal digits only, so "-1" is
/// refused instead of wrapping to 2^64 - 1, and anything above 18446744073709551615 too.
CLI::Validator unsigned_64();

/// @brief The memory an allocation may use: the machine's physical memory, or less where a
/// resource limit (RLIMIT_AS, RLIMIT_DATA) says so.
std::uint64_t memory_limit_bytes();

/// @brief Throws before allocating @p bytes that cannot fit in memory_limit_bytes(), naming
/// @p what and both sizes, e.g. "the KV cache for a context of 4096 tokens needs 21.5 GB, more
/// than this machine's 16.0 GB of memory". @p bytes is a double so that an overflowing size
/// computation is still compared correctly.
/// @throws inferlab::Error
void require_allocation(double bytes, const std::string& what);

/// @brief Offset of the first byte that is not part of valid UTF-8 in @p text, or npos.
std::size_t invalid_utf8_offset(std::string_view text);

/// @brief Throws unless @p text is valid UTF-8. @throws inferlab::Error naming @p what and the
/// first bad byte, e.g. `--prompt is not valid UTF-8 (byte 1: 0xFF)`.
void require_utf8(std::string_view text, const std::string& what);

/// @brief The `main` of every binary: parses @p argv with @p app, then runs @p body. A usage
/// error is one line `error: ...` and exit code 2; any exception @p body throws (the project's,
/// std::bad_alloc, any std::exception, anything else) is one line `error: ...` on stderr and
/// exit code 1, never a signal. It also ignores SIGXFSZ, so a write beyond the file-size
/// limit fails (and is reported) instead of killing the process.
/// @return the exit code
int run_main(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace inferlab
