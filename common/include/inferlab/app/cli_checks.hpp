#pragma once
/// @file cli_checks.hpp
/// @brief The command-line side of input checking, shared by every binary: CLI11 validators
/// for numeric flags (NaN and infinity refused, 64-bit seeds read in full, ranges named in the
/// error) and the guard every `main` runs its body in.

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/base/input_checks.hpp"

namespace inferlab {

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

/// @brief Where a flag does something: given in a mode where it would do nothing, it is an
/// error, never silently ignored (refuse_inapplicable_flags()).
struct FlagScope {
  std::string flag;   ///< e.g. "--block-size"
  bool applies;       ///< whether it does anything in the mode the command line chose
  std::string where;  ///< where it applies, e.g. "with --allocator paged or both"; empty: nowhere
  std::string mode;   ///< the mode chosen, e.g. "--allocator contiguous"; may be empty
  std::string why = {};  ///< optional: what the flag does, which explains where it applies
};

/// @brief The one rule every binary follows for flags that depend on a mode: the first flag of
/// @p scopes that is on @p app's command line but does not apply is refused in one line naming
/// the flag, where it applies and the mode chosen, e.g. `--block-size applies only with
/// --allocator paged or both, not --allocator contiguous`. Without a mode the line ends after
/// where it applies (`--system applies only with --chat`); without a `where`, it reads
/// `--reps does not apply to --chat`; a `why` comes first (`--sweep measures the real model:
/// it applies only to --clock real`).
/// @param app the parsed command line
/// @param scopes the mode-dependent flags, in the order they are checked
/// @throws inferlab::Error
void refuse_inapplicable_flags(const CLI::App& app, const std::vector<FlagScope>& scopes);

/// @brief The flag that sets core parameter @p parameter: `--` and the name with `-` for `_`
/// (`block_size` is `--block-size`), unless @p app declares no such flag and one of its flags
/// names the parameter in its `parameter_flags` table (set_parameter_flag()).
std::string flag_for_parameter(const CLI::App* app, const std::string& parameter);

/// @brief Records that core parameter @p parameter is set by @p flag on this binary, for the
/// few whose flag is not their kebab-case name (`max_n` set by `--ngram`).
void set_parameter_flag(const std::string& parameter, const std::string& flag);

/// @brief The one line run_main() prints for @p e: a ParameterError as its flag
/// (`--block-size 0: must be >= 1`), any other exception as its message.
std::string flag_error_message(const CLI::App* app, const std::exception& e);

/// @brief The `main` of every binary: parses @p argv with @p app, then runs @p body. A usage
/// error is one line `error: ...` and exit code 2; any exception @p body throws (the project's,
/// std::bad_alloc, any std::exception, anything else) is one line `error: ...` on stderr and
/// exit code 1, never a signal. It also ignores SIGXFSZ, so a write beyond the file-size
/// limit fails (and is reported) instead of killing the process. A ParameterError is printed
/// with the flag that sets the parameter (flag_error_message()).
/// @return the exit code
int run_main(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace inferlab
