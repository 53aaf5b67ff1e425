// Tests of the GGUF tokenizers on hand-made vocabularies: the byte-to-character map, the merge
// loop, the pre-tokenizer splits, byte-level BPE by merge rank, GGUF SentencePiece (U+2581
// spaces, byte fallback, the dummy prefix), special tokens with and without parse_special,
// end-of-generation ids, streaming a character split across tokens, and every vocabulary error.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/model/bpe.hpp"
#include "inferlab/model/pre_tokenizer.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "test_support.hpp"

namespace {

using inferlab::EncodeOptions;
using inferlab::Error;
using inferlab::PreTokenizer;
using inferlab::StreamDecoder;
using inferlab::Tokenizer;
using inferlab::TokenType;
using inferlab::VocabularySpec;

using Words = std::vector<std::string>;

Words split(const PreTokenizer& p, const std::string& text) {
  Words out;
  for (const std::string_view w : p.split(text)) out.emplace_back(w);
  return out;
}

/// A small gpt2 vocabulary: the 256 byte characters (ids 0..255 in byte order), then the
/// merges' results, then a control token <|im_start|>, <|im_end|> and a user-defined "<tool>".
VocabularySpec tiny_gpt2(const std::string& pre = "gpt-2") {
  VocabularySpec v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(inferlab::byte_level_chars()[b]);
  v.merges = {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"};
  for (const std::string& m : v.merges) {
    const std::size_t space = m.find(' ');
    v.tokens.push_back(m.substr(0, space) + m.substr(space + 1));
  }
  v.types.assign(v.tokens.size(), 1);
  v.tokens.push_back("<|im_start|>");
  v.types.push_back(3);
  v.tokens.push_back("<|im_end|>");
  v.types.push_back(3);
  v.tokens.push_back("<tool>");
  v.types.push_back(4);
  v.eos_id = static_cast<int>(v.tokens.size()) - 2;
  return v;
}

int id_of(const Tokenizer& t, const std::string& piece) {
  const int id = t.find(piece);
  REQUIRE(id >= 0);
  return id;
}

/// A GGUF-style SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte pieces, then pieces
/// written with U+2581 for the space.
VocabularySpec tiny_spm() {
  VocabularySpec v;
  v.model = "llama";
  auto add = [&](const std::string& text, float score, int type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, 6);
  const std::string sp = "\xE2\x96\x81";  // U+2581
  add(sp, -1, 1);
  for (const char* c : {"a", "b", "c", "h", "i"}) add(c, -2, 1);
  add(sp + "h", -3, 1);
  add(sp + "hi", -4, 1);
  add("ab", -5, 1);
  add("bc", -6, 1);
  return v;
}

}  // namespace

TEST_CASE("byte-level characters: printable bytes stand for themselves, the rest move up",
          "[tokenizer][unit]") {
  const auto& chars = inferlab::byte_level_chars();
  CHECK(chars['A'] == "A");
  CHECK(chars[' '] == "\xC4\xA0");   // 'Ġ' U+0120
  CHECK(chars['\n'] == "\xC4\x8A");  // 'Ċ' U+010A
  CHECK(chars[0xE9] == "\xC3\xA9");  // 'é' is printable Latin-1
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string encoded = inferlab::to_byte_level(all);
  REQUIRE(inferlab::from_byte_level(encoded) == all);
  CHECK_FALSE(inferlab::from_byte_level("\xE2\x82\xAC").has_value());  // '€' is not in the map
}

TEST_CASE("merge_symbols: the highest priority first, the leftmost on a tie", "[tokenizer][unit]") {
  std::vector<std::string> symbols = {"a", "a", "a", "b"};
  // "aa" beats "ab"; of the two "aa" pairs the leftmost merges, leaving "aa", "a", "b"; then
  // "ab" (priority 1) merges, "aaa" is not allowed.
  inferlab::merge_symbols(symbols, [](std::string_view l, std::string_view r) {
    const std::string pair = std::string(l) + std::string(r);
    if (pair == "aa") return std::optional<double>(2.0);
    if (pair == "ab") return std::optional<double>(1.0);
    return std::optional<double>();
  });
  CHECK(symbols == std::vector<std::string>{"aa", "ab"});
}

TEST_CASE("pre-tokenizers split as their models' tokenizer.json expressions say",
          "[tokenizer][unit]") {
  const PreTokenizer gpt2 = PreTokenizer::named("gpt-2");
  CHECK(split(gpt2, "Hello world's 2024!!  ok\n") ==
        Words{"Hello", " world", "'s", " 2024", "!!", " ", " ok", "\n"});
  // SmolLM2: every digit alone, then GPT-2's rule.
  CHECK(split(PreTokenizer::named("smollm"), "in 2024") == Words{"in", " ", "2", "0", "2", "4"});
  // Llama 3: numbers in groups of three, a letter run takes one leading non-letter.
  CHECK(split(PreTokenizer::named("llama-bpe"), "12345 (ok) I'M") ==
        Words{"123", "45", " (", "ok", ")", " I", "'M"});
  // Qwen2: single digits.
  CHECK(split(PreTokenizer::named("qwen2"), "a 42") == Words{"a", " ", "4", "2"});
  // Letters in any script are \p{L}: PCRE2's Unicode tables, not ASCII.
  CHECK(split(gpt2, "naïve Ελλάδα") == Words{"naïve", " Ελλάδα"});
  CHECK(split(PreTokenizer::named("deepseek-coder"), "x=1\n") == Words{"x", "=", "1", "\n"});
  CHECK(split(gpt2, "").empty());
  CHECK_THROWS_WITH(PreTokenizer::named("falcon"), Catch::Contains("'falcon'") &&
                                                       Catch::Contains("smollm") &&
                                                       Catch::Contains("llama-bpe"));
}

TEST_CASE("byte-level BPE: merges by rank, lossless for any bytes", "[tokenizer][unit]") {
  const Tokenizer t = Tokenizer::from_vocabulary(tiny_gpt2());
  CHECK(t.kind_name() == "gpt2/gpt-2");
  const std::vector<int> ids = t.encode("hello world", EncodeOptions{});
  CHECK(ids == std::vector<int>{id_of(t, "hello"), id_of(t, "Ġworld")});
  CHECK(t.decode(ids) == "hello world");
  // No BOS: gpt-2's vocabulary does not ask for one.
  CHECK_FALSE(t.adds_bos());
  // Any bytes, even invalid UTF-8, round-trip through the byte characters.
  const std::string odd = "x\xFF\xC3 \t\n\xE2\x82\xAC";
  CHECK(t.decode(t.encode(odd, EncodeOptions{})) == odd);
}

TEST_CASE("special tokens: one id with parse_special, plain text without, user-defined always",
          "[tokenizer][unit]") {
  const Tokenizer t = Tokenizer::from_vocabulary(tiny_gpt2());
  const int start = id_of(t, "<|im_start|>"), tool = id_of(t, "<tool>");
  EncodeOptions special;
  special.parse_special = true;
  const std::vector<int> parsed = t.encode("<|im_start|>hello<tool>", special);
  CHECK(parsed == std::vector<int>{start, id_of(t, "hello"), tool});
  const std::vector<int> plain = t.encode("<|im_start|>hello<tool>", EncodeOptions{});
  CHECK(std::find(plain.begin(), plain.end(), start) == plain.end());
  CHECK(plain.back() == tool);  // user-defined text is kept whole either way
  // Control tokens decode to nothing; the plain-text form decodes back to the text.
  CHECK(t.decode(parsed) == "hello<tool>");
  CHECK(t.decode(plain) == "<|im_start|>hello<tool>");
  // <|im_end|> ends a turn: generation stops there; the start marker does not.
  CHECK(t.is_end_of_generation(id_of(t, "<|im_end|>")));
  CHECK_FALSE(t.is_end_of_generation(start));
}

TEST_CASE("Llama 3's pre-tokenizer takes a word that is a token whole and adds BOS",
          "[tokenizer][unit]") {
  VocabularySpec v = tiny_gpt2("llama-bpe");
  // "Ġworld" cannot be reached by these merges once "Ġw" is gone...
  v.merges = {"h e", "l l"};
  v.tokens.push_back("<|begin_of_text|>");
  v.types.push_back(3);
  v.bos_id = static_cast<int>(v.tokens.size()) - 1;
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  CHECK(t.adds_bos());
  // ...but the word " world" is a token, taken as it is.
  CHECK(t.encode(" world", EncodeOptions{}) == std::vector<int>{v.bos_id, id_of(t, "Ġworld")});
  EncodeOptions no_bos;
  no_bos.add_bos = false;
  CHECK(t.encode(" world", no_bos) == std::vector<int>{id_of(t, "Ġworld")});
}

TEST_CASE("GGUF SentencePiece: U+2581 spaces, dummy prefix, byte fallback, markup",
          "[tokenizer][unit]") {
  const Tokenizer t = Tokenizer::from_vocabulary(tiny_spm());
  const std::string sp = "\xE2\x96\x81";
  EncodeOptions plain;
  plain.add_bos = false;
  // "hi abc": "▁hi" by score, then "▁", "ab" (-5) before "bc" (-6), "c".
  CHECK(t.encode("hi abc", plain) ==
        std::vector<int>{id_of(t, sp + "hi"), id_of(t, sp), id_of(t, "ab"), id_of(t, "c")});
  // BOS by default (add_bos_token defaults to true for llama); the dummy-prefix space is
  // dropped again when decoding.
  const std::vector<int> ids = t.encode("hi abc", EncodeOptions{});
  CHECK(ids.front() == 1);
  CHECK(t.decode(ids) == "hi abc");
  CHECK(t.decode(t.encode("hi abc", plain)) == "hi abc");
  // 'é' is not a piece: its two UTF-8 bytes as byte pieces, which decode back to it.
  const std::vector<int> e = t.encode("é", plain);
  CHECK(e == std::vector<int>{id_of(t, sp), id_of(t, "<0xC3>"), id_of(t, "<0xA9>")});
  CHECK(t.decode(e) == "é");
  // "<s>" is one token only when parsed as markup; the text after it gets the dummy prefix.
  EncodeOptions special = plain;
  special.parse_special = true;
  CHECK(t.encode("<s>hi", special) == std::vector<int>{1, id_of(t, sp + "hi")});
  CHECK(t.encode("<s>", plain).size() > 1);
  CHECK(t.is_end_of_generation(2));
}

TEST_CASE("StreamDecoder holds a character split across byte-level tokens", "[tokenizer][unit]") {
  const Tokenizer t = Tokenizer::from_vocabulary(tiny_gpt2());
  // "é" is C3 A9: two tokens of one byte each in this vocabulary.
  const std::vector<int> ids = t.encode("é!", EncodeOptions{});
  REQUIRE(ids.size() == 3);
  StreamDecoder printer(t);
  CHECK(printer.push(-1, ids[0]).empty());
  CHECK(printer.push(ids[0], ids[1]) == "é");
  CHECK(printer.push(ids[1], ids[2]) == "!");
}

TEST_CASE("from_vocabulary rejects each bad vocabulary with one clear message",
          "[tokenizer][unit]") {
  // The message from_vocabulary() throws for tiny_gpt2() after @p change.
  auto with = [](auto change) {
    VocabularySpec v = tiny_gpt2();
    change(v);
    try {
      Tokenizer::from_vocabulary(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(with([](VocabularySpec& v) { v.model = "t5"; }),
             Catch::Contains("'t5'") && Catch::Contains("llama, gpt2"));
  CHECK_THAT(with([](VocabularySpec& v) { v.pre = "tekken"; }),
             Catch::Contains("'tekken'") && Catch::Contains("qwen2"));
  CHECK_THAT(with([](VocabularySpec& v) { v.pre.clear(); }), Catch::Contains("no pre-tokenizer"));
  CHECK_THAT(with([](VocabularySpec& v) { v.merges.push_back("Ġ zz"); }),
             Catch::Contains("'zz', which is not a token"));
  CHECK_THAT(with([](VocabularySpec& v) { v.merges.push_back("nospace"); }),
             Catch::Contains("not two tokens"));
  CHECK_THAT(with([](VocabularySpec& v) { v.merges.clear(); }), Catch::Contains("no merges"));
  CHECK_THAT(with([](VocabularySpec& v) { v.tokens[260] = "bad\xFF"; }),
             Catch::Contains("token 260 is not valid UTF-8"));
  CHECK_THAT(with([](VocabularySpec& v) { v.tokens[260] = "hello"; }),
             Catch::Contains("appears twice"));
  CHECK_THAT(with([](VocabularySpec& v) { v.types.pop_back(); }),
             Catch::Contains("token_type has"));
  CHECK_THAT(with([](VocabularySpec& v) { v.types[5] = 9; }),
             Catch::Contains("unknown token type 9"));
  CHECK_THAT(with([](VocabularySpec& v) { v.eos_id = 100000; }),
             Catch::Contains("eos_token_id 100000 is outside"));
  CHECK_THAT(with([](VocabularySpec& v) { v.tokens.clear(); }), Catch::Contains("no tokens"));
  CHECK_THAT(with([](VocabularySpec& v) { v.add_bos = true; }), Catch::Contains("names none"));
  CHECK_THAT(with([](VocabularySpec& v) { v.tokens[264] = "€"; }),
             Catch::Contains("not byte-level text"));
}
