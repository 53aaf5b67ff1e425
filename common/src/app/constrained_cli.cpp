// Chapter 08's command line: the constraint given, MaskBench over files, the output.
#include "inferlab/app/constrained_cli.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/constrain/maskbench.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/runtime/metrics.hpp"

namespace inferlab {

namespace {

// A grammar or schema file: far larger than any real one is refused before it is read.
constexpr std::size_t kMaxConstraintFileBytes = std::size_t(16) << 20;

// A byte string as a JSON string; a byte that is part of a character is shown as U+FFFD.
std::string json_text(const std::string& bytes) {
  return nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::vector<std::string> maskbench_input_files(const std::vector<std::string>& paths,
                                               const std::string& what) {
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) require_regular_file(p, what);
  }
  try {
    return list_json_files(paths);
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error(fmt::format("{} '{}': {}", what, e.path1().string(), e.code().message()));
  }
}

ConstraintInput read_constraint(const std::string& regex, const std::string& grammar_file,
                                const std::string& schema_file, bool json_mode) {
  const int given = !regex.empty() + !grammar_file.empty() + !schema_file.empty() + json_mode;
  if (given != 1) {
    throw Error(
        "give exactly one constraint: --regex R, --grammar FILE.gbnf, --json-schema FILE or "
        "--json-mode");
  }
  ConstraintInput c;
  if (!regex.empty()) {
    c = {ConstraintKind::regex, regex, "--regex"};
  } else if (!grammar_file.empty()) {
    c = {ConstraintKind::gbnf,
         read_regular_file(grammar_file, "--grammar", kMaxConstraintFileBytes), grammar_file};
  } else if (!schema_file.empty()) {
    c = {ConstraintKind::json_schema,
         read_regular_file(schema_file, "--json-schema", kMaxConstraintFileBytes), schema_file};
  }
  return c;
}

int run_maskbench_files(const std::vector<std::string>& paths, const std::string& tokenizer,
                        double time_limit_s, bool cpu_clock, bool json) {
  const std::vector<std::string> files = maskbench_input_files(paths, "--maskbench");
  if (tokenizer.empty()) throw Error("--maskbench needs --tokenizer PATH");
  if (!(time_limit_s > 0)) throw Error("--time-limit must be > 0 seconds");
  // A bare name is looked up where models are ($INFERLAB_MODELS, then models/).
  const Tokenizer tok = Tokenizer::load(find_tokenizer(tokenizer, "", 0));
  const MaskBenchVocab vocab(tok);
  std::vector<MaskBenchResult> results;
  for (const std::string& path : files) {
    results.push_back(run_maskbench_isolated(path, vocab, time_limit_s, cpu_clock));
    const MaskBenchResult& r = results.back();
    if (json) {
      std::cout << r.to_json().dump() << '\n' << std::flush;
    } else {
      std::printf("%-50s %s\n", r.id.c_str(),
                  !r.file_error.empty()      ? ("file error: " + r.file_error).c_str()
                  : !r.crash.empty()         ? ("CRASH " + r.crash).c_str()
                  : !r.compile_error.empty() ? ("compile error: " + r.compile_error).c_str()
                  : !r.validation_error.empty()
                      ? ("validation error: " + r.validation_error).c_str()
                      : "ok");
    }
  }
  std::cout << maskbench_summary(results).dump(json ? -1 : 1) << '\n';
  return 0;
}

nlohmann::ordered_json constrained_json(const std::string& source, const ConstrainedResult& r,
                                        const ConstrainedResult* unconstrained) {
  const Summary mask_us = summarize(r.mask_us);
  nlohmann::ordered_json j;
  j["chapter"] = "08_constrained_sampling";
  j["constraint"] = source;
  j["tokens"] = r.tokens;
  j["text"] = r.text;
  j["valid"] = r.valid;
  j["ended"] = r.ended;
  j["mask_us_p50"] = mask_us.p50;
  j["mask_us_p99"] = mask_us.p99;
  j["removed_mass"] = r.removed_mass;
  if (unconstrained) {
    j["allowed"] = r.allowed;
    j["unconstrained"] = {{"tokens", unconstrained->tokens},
                          {"text", unconstrained->text},
                          {"valid", unconstrained->valid},
                          {"ended", unconstrained->ended}};
  }
  return j;
}

void print_mask_comparison(const ConstrainedResult& r, const ConstrainedResult& u,
                           const std::vector<std::string>& token_bytes, int end_token) {
  std::printf("\n--- unconstrained, same seed ---\n%s\nvalid: %s\n", u.text.c_str(),
              u.valid ? "yes" : "no");
  std::printf(
      "\nprobability mass the mask removed at each constrained step:\n  %4s  %8s  %9s  %s\n",
      "step", "allowed", "removed", "token");
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    const int t = r.tokens[i];
    std::printf(
        "  %4zu  %8d  %8.1f%%  %s\n", i, r.allowed[i], 100.0 * r.removed_mass[i],
        t == end_token ? "<eos>" : json_text(token_bytes[static_cast<std::size_t>(t)]).c_str());
  }
}

}  // namespace inferlab
