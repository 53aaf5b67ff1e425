// Chapter 08: constrained sampling.
//
// Compiles a constraint (a regex, a GBNF grammar, a JSON Schema, or JSON mode) into the byte
// grammar, then generates: at every step the parser's state gives a mask over the vocabulary,
// masked logits become -inf before the sampler, and the parser advances by the drawn token.
// --compare runs the same seed without the mask and shows what the mask removed. --maskbench
// runs the field's benchmark protocol over MaskBench files instead of generating. The logic
// lives in common/include/inferlab/constrain/; this file parses flags and prints.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/constrain/constraint.hpp"
#include "inferlab/constrain/maskbench.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/runtime/metrics.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  std::string regex, grammar_file, schema_file;
  bool json_mode = false;
  bool compare = false;
  std::vector<std::string> maskbench;
  double time_limit_s = 60.0;
  bool cpu_clock = false;
  JsonSchemaLimits limits;
};

// A grammar or schema file: far larger than any real one is refused before it is read.
constexpr std::size_t kMaxConstraintFileBytes = std::size_t(16) << 20;

std::string read_file(const std::string& path, const char* flag) {
  return read_regular_file(path, flag, kMaxConstraintFileBytes);
}

// The MaskBench files of --maskbench: each argument a folder or a regular file (never a FIFO,
// a device or a loop, which would block or be read forever), then list_json_files().
std::vector<std::string> maskbench_files(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) require_regular_file(p, "--maskbench");
  }
  try {
    return list_json_files(paths);
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error(fmt::format("--maskbench '{}': {}", e.path1().string(), e.code().message()));
  }
}

// The flags that apply only in some modes (refuse_inapplicable_flags).
void check_mode_flags(const CLI::App& app, const Options& o) {
  const bool bench = !o.maskbench.empty();
  const std::string mode = bench ? "--maskbench" : "a generation (no --maskbench)";
  std::vector<FlagScope> scopes;
  for (const char* flag : {"--time-limit", "--cpu-clock"})
    scopes.push_back({flag, bench, "with --maskbench", mode});
  for (const char* flag : {"--regex", "--grammar", "--json-schema", "--json-mode", "--compare",
                           "--model", "--synthetic", "--prompt", "--parse-special", "--no-bos",
                           "--steps", "--device", "--temperature", "--top-k", "--top-p", "--min-p",
                           "--repetition-penalty", "--frequency-penalty", "--presence-penalty",
                           "--seed", "--max-whitespace"})
    scopes.push_back({flag, !bench, "to a generation", "--maskbench"});
  const bool json = !o.schema_file.empty() || o.json_mode;
  if (!bench)
    scopes.push_back({"--max-whitespace", json, "with --json-schema or --json-mode",
                      !o.regex.empty()          ? "--regex"
                      : !o.grammar_file.empty() ? "--grammar"
                                                : "no constraint"});
  refuse_inapplicable_flags(app, scopes);
}

int run_maskbench(const Options& o) {
  const std::vector<std::string> files = maskbench_files(o.maskbench);
  if (o.gen.tokenizer.empty()) throw Error("--maskbench needs --tokenizer PATH");
  if (!(o.time_limit_s > 0)) throw Error("--time-limit must be > 0 seconds");
  // A bare name is looked up where models are ($INFERLAB_MODELS, then models/).
  const Tokenizer tok = Tokenizer::load(find_tokenizer(o.gen.tokenizer, "", 0));
  const MaskBenchVocab vocab(tok);
  std::vector<MaskBenchResult> results;
  for (const std::string& path : files) {
    results.push_back(run_maskbench_isolated(path, vocab, o.time_limit_s, o.cpu_clock));
    const MaskBenchResult& r = results.back();
    if (o.gen.json) {
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
  std::cout << maskbench_summary(results).dump(o.gen.json ? -1 : 1) << '\n';
  return 0;
}

int run(const Options& o) {
  if (!o.maskbench.empty()) return run_maskbench(o);
  const int given =
      !o.regex.empty() + !o.grammar_file.empty() + !o.schema_file.empty() + o.json_mode;
  if (given != 1) {
    throw Error(
        "give exactly one constraint: --regex R, --grammar FILE.gbnf, --json-schema FILE or "
        "--json-mode");
  }
  ConstraintKind kind = ConstraintKind::json_mode;
  std::string text, source = "--json-mode";
  if (!o.regex.empty()) {
    kind = ConstraintKind::regex;
    text = o.regex;
    source = "--regex";
  } else if (!o.grammar_file.empty()) {
    kind = ConstraintKind::gbnf;
    text = read_file(o.grammar_file, "--grammar");
    source = o.grammar_file;
  } else if (!o.schema_file.empty()) {
    kind = ConstraintKind::json_schema;
    text = read_file(o.schema_file, "--json-schema");
    source = o.schema_file;
  }
  const Grammar grammar = compile_constraint(kind, text, source, o.limits);
  PushdownParser parser(grammar);
  const LoadedModel m = load_model(o.gen);
  const std::vector<std::string> bytes = token_byte_strings(*m.tokenizer);
  const TokenTrie trie(bytes);
  MaskComputer masks(parser, trie, bytes, m.tokenizer->eos_id());
  if (!o.gen.json) {
    print_run_header(
        "InferLab chapter 08: constrained sampling", m, o.gen,
        fmt::format("constraint: {} ({} rules, {} automaton nodes); vocabulary trie: {} nodes",
                    source, grammar.rules.size(), parser.num_nodes(), trie.num_nodes()));
  }
  ConstrainedOptions c;
  c.prompt = o.gen.prompt;
  c.encoding = generate_options(o.gen).encoding;
  c.steps = o.gen.steps;
  c.sampling = o.gen.sampling;
  const ConstrainedResult r = generate_constrained(*m.model, *m.tokenizer, parser, masks, bytes, c);
  const Summary mask_us = summarize(r.mask_us);
  if (o.gen.json) {
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
    // The text may end inside a character when --steps runs out: shown as U+FFFD.
    std::cout << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 0;
  }
  std::printf("\n%s\n\n--- constrained ---\n", r.text.c_str());
  std::printf("tokens: %zu, ended with EOS: %s, valid: %s\n", r.tokens.size(),
              r.ended ? "yes" : "no",
              r.valid ? "yes" : "no (stopped before the constraint was complete: raise --steps)");
  std::printf(
      "mask time per token: p50 %.1f us, p99 %.1f us, max %.1f us (%zu parser states built)\n",
      mask_us.p50, mask_us.p99, mask_us.max, parser.num_states());
  if (o.compare) {
    c.constrained = false;
    const ConstrainedResult u =
        generate_constrained(*m.model, *m.tokenizer, parser, masks, bytes, c);
    std::printf("\n--- unconstrained, same seed ---\n%s\nvalid: %s\n", u.text.c_str(),
                u.valid ? "yes" : "no");
    std::printf(
        "\nprobability mass the mask removed at each constrained step:\n  %4s  %8s  %9s  %s\n",
        "step", "allowed", "removed", "token");
    for (std::size_t i = 0; i < r.tokens.size(); ++i) {
      const int t = r.tokens[i];
      std::printf("  %4zu  %8d  %8.1f%%  %s\n", i, r.allowed[i], 100.0 * r.removed_mass[i],
                  t == masks.end_token()
                      ? "<eos>"
                      // A byte token may be part of a character: shown as U+FFFD.
                      : nlohmann::json(bytes[static_cast<std::size_t>(t)])
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 08: constrained sampling (regex, GBNF, JSON Schema, JSON mode as "
      "token masks)"};
  Options o;
  add_generation_flags(app, o.gen);
  app.add_option("--regex", o.regex, "constrain the output to this regular expression");
  app.add_option("--grammar", o.grammar_file, "constrain the output to this GBNF grammar file");
  app.add_option("--json-schema", o.schema_file, "constrain the output to this JSON Schema file");
  app.add_flag("--json-mode", o.json_mode, "constrain the output to any JSON object (JSON mode)");
  app.add_flag("--compare", o.compare,
               "also generate unconstrained with the same seed and show the "
               "probability mass the mask removed per step");
  app.add_option("--maskbench", o.maskbench,
                 "run the MaskBench protocol over these files or directories (needs --tokenizer)");
  app.add_option("--max-whitespace", o.limits.max_whitespace,
                 "JSON: longest run of whitespace between tokens (-1: unbounded)")
      ->check(integer_in(-1, 1 << 20, "-1: unbounded"))
      ->capture_default_str();
  app.add_option("--time-limit", o.time_limit_s,
                 "MaskBench: seconds allowed per file (default 60)")
      ->check(finite_in(0.0, 86400.0, /*lo_open=*/true));
  app.add_flag(
      "--cpu-clock", o.cpu_clock,
      "MaskBench: time masks with the thread's CPU clock (a machine shared with other jobs)");
  app.remove_option(app.get_option("--dump-logits"));  // nothing here writes logits
  return run_chapter(app, argc, argv, [&] {
    check_mode_flags(app, o);
    return run(o);
  });
}
