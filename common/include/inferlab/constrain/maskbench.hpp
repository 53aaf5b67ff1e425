#pragma once
/// @file maskbench.hpp
/// @brief The MaskBench protocol (the llguidance authors' benchmark for mask engines) and the
/// conversion of JSON-Schema-Test-Suite files into its format.
///
/// A MaskBench file is `{"schema": S, "tests": [{"valid": bool, "data": value}, ...]}`. For
/// each file: compile S (time to first mask = compile + the first mask); for each test,
/// serialise data as Python's json.dumps, tokenize without BOS and without the dummy-prefix
/// space, and for each token compute the mask of the current state and check the token is
/// allowed, then EOS at the end. A valid test must pass every check; an invalid one must fail
/// one (else it is a validation error: an invalid instance accepted, or a valid one rejected).
/// A file that is not of this form (a test without a boolean "valid" or without "data") is a
/// file error: reported as such, never counted against the engine.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/constrain/token_mask.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief The result of one MaskBench file.
struct MaskBenchResult {
  std::string id;                      ///< the file's name
  std::string file_error;              ///< empty unless the file is not a MaskBench file
  std::string compile_error;           ///< empty when the schema compiled
  std::string validation_error;        ///< empty when every test behaved as labelled
  std::string crash;                   ///< empty unless the run crashed or hit the time limit
  int num_valid_tests = 0;             ///< tests labelled valid
  int num_invalid_tests = 0;           ///< tests labelled invalid
  double ttfm_us = 0.0;                ///< compile + first mask, microseconds
  std::vector<double> masks_us;        ///< every mask obtained (EOS checks included), microseconds
  std::vector<double> first_masks_us;  ///< the masks computed rather than found in the cache
  int num_tokens = 0;                  ///< tokens checked, over all tests
  bool invalid_accepted = false;       ///< at least one invalid instance was accepted
  bool valid_rejected = false;         ///< at least one valid instance was rejected
  /// The descriptions (or "test N") of the invalid instances accepted.
  std::vector<std::string> invalid_accepted_tests;
  std::vector<std::string> valid_rejected_tests;  ///< the valid instances rejected
  /// @brief The JSON line the runner prints: id, file_error?, compile_error?,
  /// validation_error? (the first wrong test), invalid_accepted? and valid_rejected? (every
  /// wrong test's description), crash?, num_valid_tests, num_invalid_tests, ttfm_us,
  /// masks_us (sum), max_mask_us, num_tokens.
  nlohmann::ordered_json to_json() const;
};

/// @brief The vocabulary as the runner needs it: byte strings and their trie.
struct MaskBenchVocab {
  const Tokenizer* tokenizer = nullptr;  ///< for encoding the instances
  std::vector<std::string> token_bytes;  ///< token_byte_strings(*tokenizer)
  TokenTrie trie;                        ///< the trie of token_bytes
  /// @brief Builds both from @p tok (which must outlive this object).
  explicit MaskBenchVocab(const Tokenizer& tok);
};

/// @brief Runs one MaskBench file's contents in this process.
/// @param file the parsed file: {"schema": ..., "tests": [...]}
/// @param id the name printed in the result
/// @param vocab the tokenizer, its byte strings and trie
/// @param time_limit_s the file stops with crash = "time limit ..." once this is exceeded
/// @param cpu_clock time with this thread's CPU clock instead of wall time (for machines
///        shared with other jobs, where wall time counts the waits)
/// @return the result line (compile or validation error, times, counts)
MaskBenchResult run_maskbench(const nlohmann::ordered_json& file, const std::string& id,
                              const MaskBenchVocab& vocab, double time_limit_s,
                              bool cpu_clock = false);

/// @brief Runs the file at @p path in a child process, so that a crash (or running past
/// @p time_limit_s, when it is killed) is reported in the result instead of ending the run.
/// @p cpu_clock as in run_maskbench().
MaskBenchResult run_maskbench_isolated(const std::string& path, const MaskBenchVocab& vocab,
                                       double time_limit_s, bool cpu_clock = false);

/// @brief The summary line: files, passing, compile_errors, validation_errors, crashes,
/// mask_us_p50, mask_us_p99 (over every mask of every file), ttfm_us_p50; then, beyond the
/// protocol, file_errors (files that are not MaskBench files, counted in no other field),
/// invalid_accepted and valid_rejected (files with at least one such test; a file may count
/// in both) and the p50/p99 of the masks that were computed (not cached).
nlohmann::ordered_json maskbench_summary(const std::vector<MaskBenchResult>& results);

/// @brief Converts one JSON-Schema-Test-Suite file (an array of groups {description, schema,
/// tests: [{description, data, valid}]}) into MaskBench files, one per group.
std::vector<nlohmann::ordered_json> maskbench_from_test_suite(const nlohmann::ordered_json& suite);

/// @brief Expands files and directories (recursively, *.json, sorted) into a list of files,
/// each file once however often it is named (directly, or through two folders).
/// @throws inferlab::ParameterError (on `maskbench`) if a path does not exist or a folder
/// holds no *.json file.
std::vector<std::string> list_json_files(const std::vector<std::string>& paths);

}  // namespace inferlab
