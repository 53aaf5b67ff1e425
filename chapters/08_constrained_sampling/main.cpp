// Chapter 08: constrained sampling.
//
// Compiles a constraint (a regex, a GBNF grammar, a JSON Schema, or JSON mode) into the byte
// grammar, then generates: at every step the parser's state gives a mask over the vocabulary,
// masked logits become -inf before the sampler, and the parser advances by the drawn token.
// --compare runs the same seed without the mask and shows what the mask removed. --maskbench
// runs the field's benchmark protocol over MaskBench files instead of generating. The logic
// lives in common/include/inferlab/constrain/, the command line's reading, MaskBench runs and
// output in app/constrained_cli.hpp; this file parses flags and wires them together.
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/constrained_cli.hpp"
#include "inferlab/constrain/constraint.hpp"
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

int run(const Options& o) {
  if (!o.maskbench.empty())
    return run_maskbench_files(o.maskbench, o.gen.tokenizer, o.time_limit_s, o.cpu_clock,
                               o.gen.json);
  const ConstraintInput in = read_constraint(o.regex, o.grammar_file, o.schema_file, o.json_mode);
  const std::string& source = in.source;
  const Grammar grammar = compile_constraint(in.kind, in.text, source, o.limits);
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
  // The same seed without the mask (--compare), after the constrained run's numbers are taken.
  auto unconstrained = [&] {
    c.constrained = false;
    return generate_constrained(*m.model, *m.tokenizer, parser, masks, bytes, c);
  };
  if (o.gen.json) {
    const std::optional<ConstrainedResult> u =
        o.compare ? std::optional(unconstrained()) : std::nullopt;
    // The text may end inside a character when --steps runs out: shown as U+FFFD.
    std::cout << constrained_json(source, r, u ? &*u : nullptr)
                     .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
    return 0;
  }
  const Summary mask_us = summarize(r.mask_us);
  std::printf("\n%s\n\n--- constrained ---\n", r.text.c_str());
  std::printf("tokens: %zu, ended with EOS: %s, valid: %s\n", r.tokens.size(),
              r.ended ? "yes" : "no",
              r.valid ? "yes" : "no (stopped before the constraint was complete: raise --steps)");
  std::printf(
      "mask time per token: p50 %.1f us, p99 %.1f us, max %.1f us (%zu parser states built)\n",
      mask_us.p50, mask_us.p99, mask_us.max, parser.num_states());
  if (o.compare) print_mask_comparison(r, unconstrained(), bytes, masks.end_token());
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
