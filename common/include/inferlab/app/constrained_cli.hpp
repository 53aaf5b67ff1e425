#pragma once
/// @file constrained_cli.hpp
/// @brief Chapter 08's command line around the constraint compilers: which constraint the flags
/// give (and its file read safely), the MaskBench run over files and folders, and the output of
/// a constrained generation (JSON, and the comparison with an unconstrained one).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/constrain/constraint.hpp"

namespace inferlab {

/// @brief The one constraint the flags gave, read and ready to compile.
struct ConstraintInput {
  ConstraintKind kind = ConstraintKind::json_mode;  ///< its language
  std::string text;                                 ///< the regex, grammar or schema text
  std::string source = "--json-mode";               ///< the name errors and the output give it
};

/// @brief The constraint of exactly one of --regex, --grammar, --json-schema and --json-mode;
/// a file is read only if it is a regular file within a size limit (read_regular_file()).
/// @param regex --regex (empty: not given)
/// @param grammar_file --grammar (empty: not given)
/// @param schema_file --json-schema (empty: not given)
/// @param json_mode --json-mode
/// @return the constraint, with `source` the file's path or the flag
/// @throws inferlab::Error when none or more than one is given, or a file cannot be read
ConstraintInput read_constraint(const std::string& regex, const std::string& grammar_file,
                                const std::string& schema_file, bool json_mode);

/// @brief The JSON files @p paths name: each a folder (its `*.json`, list_json_files()) or a
/// regular file, checked before anything is read (never a FIFO, a device or a symlink loop,
/// which would block or be read forever).
/// @param paths the files and folders given
/// @param what what they are, for errors: "--maskbench" or "input"
/// @return the files, sorted, each once
/// @throws inferlab::Error naming @p what and the path
std::vector<std::string> maskbench_input_files(const std::vector<std::string>& paths,
                                               const std::string& what);

/// @brief Runs the MaskBench protocol over @p paths (files, or folders searched for `*.json`),
/// each file in its own process (run_maskbench_isolated()), printing one line per file (one
/// JSON object per line with @p json) and then the summary.
/// @param paths the --maskbench arguments: folders or regular files (never a FIFO or device)
/// @param tokenizer --tokenizer: a path, or a name looked up where models are
/// @param time_limit_s seconds allowed per file
/// @param cpu_clock time masks with the thread's CPU clock
/// @param json one JSON object per line instead of text
/// @return the exit code (0)
/// @throws inferlab::Error for a path that is not a folder or regular file, no tokenizer
int run_maskbench_files(const std::vector<std::string>& paths, const std::string& tokenizer,
                        double time_limit_s, bool cpu_clock, bool json);

/// @brief Chapter 08's `--json` object: chapter, constraint, tokens, text, valid, ended,
/// mask_us_p50, mask_us_p99, removed_mass; with @p unconstrained (--compare) also `allowed`
/// (tokens the mask allowed at each step) and `unconstrained` (tokens, text, valid, ended of
/// the same seed without the mask).
/// @param source the constraint's name (ConstraintInput::source)
/// @param r the constrained generation
/// @param unconstrained the unconstrained one, or nullptr without --compare
/// @return the object, keys in that order
nlohmann::ordered_json constrained_json(const std::string& source, const ConstrainedResult& r,
                                        const ConstrainedResult* unconstrained);

/// @brief Prints the unconstrained generation @p u of the same seed as @p r, whether it is
/// valid, and for each constrained step the tokens allowed, the probability mass the mask
/// removed and the token drawn (`<eos>` for @p end_token).
/// @param r the constrained generation
/// @param u the unconstrained one
/// @param token_bytes (vocab) each token's bytes
/// @param end_token the mask's end token (MaskComputer::end_token())
void print_mask_comparison(const ConstrainedResult& r, const ConstrainedResult& u,
                           const std::vector<std::string>& token_bytes, int end_token);

}  // namespace inferlab
