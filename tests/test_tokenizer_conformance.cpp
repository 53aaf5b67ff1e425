// Tokenizer conformance against llama.cpp: every test case of llama.cpp's vocabulary-only GGUF
// files (Llama 3, Qwen2, GPT-2, DeepSeek Coder, Llama 2, Phi-3) must give llama.cpp's ids and
// decode back to its text; SmolLM2's own vocabulary (gpt2/smollm) against the ids recorded in
// tests/golden/smollm2_tokenizer.json. The vocabularies live beside the models folder
// (../tokenizers, or $INFERLAB_TOKENIZERS); without them the tests are skipped (failed under
// INFERLAB_REQUIRE_MODELS=1).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/model/tokenizer.hpp"
#include "test_support.hpp"

namespace {

using inferlab::EncodeOptions;
using inferlab::Tokenizer;

/// $INFERLAB_TOKENIZERS, else the tokenizers/ folder beside the models folder.
std::filesystem::path tokenizers_dir() {
  if (const char* env = std::getenv("INFERLAB_TOKENIZERS"); env && *env) return env;
  return inferlab::test::models_dir() / ".." / "tokenizers";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Case {
  std::string text;
  std::vector<int> ids;
};

/// llama.cpp's test format: NAME.inp holds the texts separated by "\n__ggml_vocab_test__\n",
/// NAME.out one line of space-separated ids per text.
std::vector<Case> read_cases(const std::string& vocab_path) {
  const std::string inp = read_all(vocab_path + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (std::size_t pos = 0; pos < inp.size();) {
    const std::size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      cases.push_back({inp.substr(pos), {}});
      break;
    }
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream out(read_all(vocab_path + ".out"));
  std::size_t i = 0;
  for (std::string line; std::getline(out, line); ++i) {
    REQUIRE(i < cases.size());
    std::istringstream fields(line);
    for (int id; fields >> id;) cases[i].ids.push_back(id);
  }
  REQUIRE(i == cases.size());
  return cases;
}

/// What a case of @p t's kind decodes back to: the text itself (SentencePiece drops the dummy
/// prefix space again when decoding).
void check_cases(const Tokenizer& t, const std::vector<Case>& cases, const std::string& name) {
  EncodeOptions options;  // as llama.cpp's test: no BOS, special text taken as plain text
  options.add_bos = false;
  int ids_ok = 0, text_ok = 0;
  for (const Case& c : cases) {
    const std::vector<int> ids = t.encode(c.text, options);
    const bool same_ids = ids == c.ids;
    const bool same_text = t.decode(c.ids) == c.text;
    ids_ok += same_ids;
    text_ok += same_text;
    if (!same_ids) {
      std::ostringstream got, want;
      for (const int id : ids) got << ' ' << id;
      for (const int id : c.ids) want << ' ' << id;
      UNSCOPED_INFO(name << ": text '" << c.text << "'\n  got " << got.str() << "\n  want "
                         << want.str());
    }
    if (!same_text)
      UNSCOPED_INFO(name << ": '" << c.text << "' decodes to '" << t.decode(c.ids) << "'");
    CHECK(same_ids);
    CHECK(same_text);
  }
  std::printf("%-32s %2d/%zu ids as llama.cpp, %2d/%zu decode back to the text\n", name.c_str(),
              ids_ok, cases.size(), text_ok, cases.size());
}

}  // namespace

TEST_CASE("tokenizers give llama.cpp's ids on every case of its vocabularies",
          "[tokenizer][golden]") {
  const std::filesystem::path dir = tokenizers_dir();
  for (const char* name :
       {"ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf", "ggml-vocab-gpt-2.gguf",
        "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
    const std::string path = inferlab::test::require_file(dir / name);
    const Tokenizer t = Tokenizer::load(path);
    check_cases(t, read_cases(path), name);
  }
}

TEST_CASE("SmolLM2's tokenizer (gpt2/smollm) gives the recorded ids", "[tokenizer][golden]") {
  const Tokenizer t =
      Tokenizer::load(inferlab::test::model_file("SmolLM2-135M-Instruct.Q4_1.gguf"));
  CHECK(t.kind_name() == "gpt2/smollm");
  CHECK_FALSE(t.adds_bos());
  // <|im_end|> (its EOS) and <|endoftext|> end a generation; <|im_start|> does not.
  CHECK(t.is_end_of_generation(t.find("<|im_end|>")));
  CHECK(t.is_end_of_generation(t.find("<|endoftext|>")));
  CHECK_FALSE(t.is_end_of_generation(t.find("<|im_start|>")));
  const nlohmann::json golden = nlohmann::json::parse(
      read_all(std::string(INFERLAB_SOURCE_DIR) + "/tests/golden/smollm2_tokenizer.json"));
  std::vector<Case> plain;
  for (const auto& c : golden.at("cases")) {
    const std::string text = c.at("text");
    const std::vector<int> ids = c.at("ids");
    EncodeOptions special;
    special.add_bos = false;
    special.parse_special = true;
    if (c.at("parse_special").get<bool>()) {
      // Chat markup parsed: one token per marker.
      CHECK(t.encode(text, special) == ids);
    } else {
      plain.push_back({text, ids});
    }
  }
  check_cases(t, plain, "SmolLM2-135M-Instruct (gpt2/smollm)");
}
