#pragma once
/// @file input_checks.hpp
/// @brief Checks every entry point shares, so that each input is refused before any work starts
/// with one line naming the limit: the bound on threads, allocation sizes checked against the
/// machine's memory before trying, UTF-8 validation. The command-line side (validators for
/// flags, the guard every `main` runs in) is in app/cli_checks.hpp.

#include <cstdint>
#include <string>
#include <string_view>

namespace inferlab {

/// @brief The largest --threads any binary accepts: kThreadsPerCore x the hardware threads.
/// OpenMP creates that many threads, each with its own stack; far more than the machine has
/// only slows a run down, and tens of thousands crash inside the runtime.
int max_threads();

/// @brief How many times the hardware threads --threads may ask for.
inline constexpr int kThreadsPerCore = 4;

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

}  // namespace inferlab
