// Benchmark for chapter 08: token-mask time on a real vocabulary (default: the Llama 2 32K
// tokenizer) for JSON mode and three JSON Schemas of growing size, engine vs brute-force oracle.
// For each constraint a valid instance is forced through the parser token by token; at every
// state we time: the engine's first mask (a fresh parser: transitions and mask computed from
// nothing), the engine's mask when cached, and the oracle. The engine's masks are also checked
// equal to the oracle's (a mismatch is reported and the exit code is 1). Not a test otherwise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/token_mask.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/model/model_files.hpp"

using namespace inferlab;
using Json = nlohmann::ordered_json;

namespace {

double us_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

struct Case {
  const char* name;
  Json schema;  // null: JSON mode
  Json instance;
};

std::vector<Case> cases() {
  Json small = Json::parse(
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"]})");
  Json medium = Json::parse(R"({"type":"object","properties":{
    "id":{"type":"string","format":"uuid"},"title":{"type":"string","maxLength":80},
    "tags":{"type":"array","items":{"type":"string"},"maxItems":5},
    "status":{"enum":["open","closed","merged"]},"score":{"type":"number"},
    "author":{"type":"object","properties":{"login":{"type":"string"},"email":{"type":"string","format":"email"}},"required":["login"]}},
    "required":["id","title","status"],"additionalProperties":false})");
  Json large = Json::parse(R"({"$defs":{"node":{"type":"object","properties":{
    "kind":{"enum":["file","dir","link"]},"name":{"type":"string","pattern":"^[a-zA-Z0-9_.-]+$"},
    "size":{"type":"integer","minimum":0},"mtime":{"type":"string","format":"date-time"},
    "mode":{"type":"string","pattern":"^[0-7]{3,4}$"},"owner":{"type":"string"},
    "children":{"type":"array","items":{"$ref":"#/$defs/node"}},
    "meta":{"type":"object","additionalProperties":{"type":["string","number","boolean","null"]}}},
    "required":["kind","name"],"additionalProperties":false}},"$ref":"#/$defs/node"})");
  return {
      {"json-mode", nullptr,
       Json::parse(
           R"({"model": "llama", "layers": [1, 2, 3], "ok": true, "note": "free text here, with some words"})")},
      {"schema-small", small, Json::parse(R"({"name": "Ada Lovelace", "age": 36})")},
      {"schema-medium", medium,
       Json::parse(
           R"({"id": "123e4567-e89b-12d3-a456-426614174000", "title": "Masks on the CPU", "tags": ["grammar", "json"], "status": "open", "score": 0.75, "author": {"login": "ada", "email": "ada@example.com"}})")},
      {"schema-large", large,
       Json::parse(
           R"({"kind": "dir", "name": "src", "size": 4096, "mtime": "2024-05-01T12:00:00Z", "mode": "0755", "owner": "root", "children": [{"kind": "file", "name": "main.cpp", "size": 1200, "meta": {"lang": "c++", "lines": 80}}], "meta": {}})")},
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Token-mask benchmark: engine (first and cached) vs brute-force oracle"};
  std::string tok_path;
  bool verbose = false;
  app.add_flag("--verbose", verbose, "print every step: token, first-mask time, allowed tokens");
  app.add_option("--tokenizer", tok_path,
                 "tokenizer.bin (default: the Llama 2 32K tokenizer from the model folder)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (tok_path.empty()) tok_path = find_model("tokenizer.bin");
    const Tokenizer tok = Tokenizer::load(tok_path);
    const std::vector<std::string> bytes = token_byte_strings(tok);
    const TokenTrie trie(bytes);
    std::printf("vocabulary: %s, %d tokens, trie of %zu nodes\n\n", tok_path.c_str(),
                tok.vocab_size(), trie.num_nodes());
    std::printf("%-14s %6s %10s %22s %22s %14s %10s\n", "constraint", "steps", "compile us",
                "first mask p50/p99 us", "cached mask p50/p99", "oracle p50 us", "oracle=");
    int failures = 0;
    for (const Case& c : cases()) {
      auto t0 = std::chrono::steady_clock::now();
      const Grammar g = c.schema.is_null() ? json_mode_grammar() : json_schema_grammar(c.schema);
      PushdownParser parser(g);
      const double compile_us = us_since(t0);
      MaskComputer masks(parser, trie, bytes, kEosToken);
      std::vector<int> tokens = tok.encode(python_json_dumps(c.instance), false, false, false);
      tokens.push_back(kEosToken);
      std::vector<double> first, cached, oracle;
      int state = parser.initial_state(), equal = 0;
      for (const int t : tokens) {
        t0 = std::chrono::steady_clock::now();
        const bool was_cached = masks.cached(state);
        const TokenMask& m = masks.mask(state);
        if (!was_cached) first.push_back(us_since(t0));
        if (verbose) {
          std::printf(
              "  %-14s %-16s %9.1f us %6d allowed%s\n", c.name,
              Json(t == kEosToken ? "<eos>" : bytes[static_cast<std::size_t>(t)]).dump().c_str(),
              was_cached ? 0.0 : first.back(), m.count(), was_cached ? " (cached)" : "");
        }
        t0 = std::chrono::steady_clock::now();
        const TokenMask& again = masks.mask(state);
        cached.push_back(us_since(t0));
        t0 = std::chrono::steady_clock::now();
        const TokenMask o = masks.oracle_mask(state);
        oracle.push_back(us_since(t0));
        equal += o == m && o == again;
        if (!m.allowed(t)) {
          std::printf(
              "  %s: the instance's token %d is masked (constraint and instance disagree)\n",
              c.name, t);
          ++failures;
          break;
        }
        if (t != kEosToken) state = parser.advance(state, bytes[static_cast<std::size_t>(t)]);
      }
      const Summary f = summarize(first), k = summarize(cached), o = summarize(oracle);
      std::printf("%-14s %6zu %10.0f %10.1f / %9.1f %10.2f / %9.2f %14.0f %6d/%zu\n", c.name,
                  tokens.size(), compile_us, f.p50, f.p99, k.p50, k.p99, o.p50, equal,
                  oracle.size());
      if (equal != static_cast<int>(oracle.size())) ++failures;
    }
    if (failures)
      std::printf("\n%d constraint(s) had a mask different from the oracle\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
