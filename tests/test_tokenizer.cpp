// Tests of the tokenizer: the golden ids of SentencePiece and the text llama2.c prints, every
// kind of bad tokenizer file, the BPE merge rule on a hand-made vocabulary, decoding rules, the
// UTF-8 stream decoder, and the synthetic tokenizer's round trip.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "test_support.hpp"

namespace {

using inferlab::Error;
using inferlab::StreamDecoder;
using inferlab::Tokenizer;

/// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("inferlab_test_tokenizer_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// Builds the bytes of a tokenizer.bin: int32 max_token_length, then (float32 score,
/// int32 length, bytes) per piece. Tests corrupt the result on purpose.
struct TokenizerFileBuilder {
  std::string bytes;

  template <class T>
  void put(T value) {
    bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  explicit TokenizerFileBuilder(std::int32_t max_token_length) { put(max_token_length); }
  void piece(const std::string& text, float score = 0.0f) {
    put(score);
    put(static_cast<std::int32_t>(text.size()));
    bytes += text;
  }
  /// The layout of the real files: <unk>, BOS, EOS, then the 256 byte pieces.
  void specials_and_bytes() {
    piece("<unk>");
    piece("\n<s>\n");
    piece("\n</s>\n");
    for (int b = 0; b < 256; ++b) {
      static const char* hex = "0123456789ABCDEF";
      piece(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">");
    }
  }
  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

/// Id of a byte piece.
int byte_id(unsigned char b) { return 3 + b; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Golden: the real tokenizers
// ---------------------------------------------------------------------------------------------

TEST_CASE("Llama 2 tokenizer encodes every golden text to SentencePiece's ids",
          "[tokenizer][golden]") {
  const auto golden = read_json(inferlab::test::golden_file("llama2_tokenizer_encode.json"));
  const Tokenizer tok = Tokenizer::load(inferlab::test::model_file("tokenizer.bin"), 32000);
  REQUIRE(tok.vocab_size() == 32000);
  REQUIRE(golden.at("cases").size() >= 10);
  for (const auto& c : golden.at("cases")) {
    const std::string text = c.at("text");
    const std::vector<int> expected = c.at("ids");
    INFO("text: " << text);
    CHECK(tok.encode(text) == expected);
    // The ids decode back to the text (the leading dummy space is dropped after BOS).
    CHECK(tok.decode(expected) == text);
  }
}

TEST_CASE("tok512 encodes the stories260K prompts as llama2.c does", "[tokenizer][golden]") {
  const auto golden = read_json(inferlab::test::golden_file("stories260K_greedy.json"));
  const Tokenizer tok = Tokenizer::load(inferlab::test::model_file("tok512.bin"), 512);
  REQUIRE(!golden.at("cases").empty());
  for (const auto& c : golden.at("cases")) {
    const std::string prompt = c.at("prompt");
    const std::vector<int> expected = c.at("prompt_tokens");
    INFO("case " << c.at("name").get<std::string>() << ", prompt: '" << prompt << "'");
    CHECK(tok.encode(prompt) == expected);
  }
}

TEST_CASE("StreamDecoder prints the stories260K golden tokens exactly as llama2.c did",
          "[tokenizer][golden]") {
  const auto golden = read_json(inferlab::test::golden_file("stories260K_greedy.json"));
  const Tokenizer tok = Tokenizer::load(inferlab::test::model_file("tok512.bin"), 512);
  for (const auto& c : golden.at("cases")) {
    const std::vector<int> tokens = c.at("tokens");
    const std::string expected = c.at("text");
    INFO("case " << c.at("name").get<std::string>());
    REQUIRE(tokens.size() >= 2);
    REQUIRE(tokens[0] == inferlab::kBosToken);
    // run.c prints each token after the first, decoded after the one before it.
    StreamDecoder stream(tok);
    std::string text;
    for (std::size_t i = 1; i < tokens.size(); ++i) text += stream.push(tokens[i - 1], tokens[i]);
    text += stream.flush();
    CHECK(text == expected);
  }
}

TEST_CASE("load without a vocabulary size takes every piece in the file", "[tokenizer][golden]") {
  const Tokenizer tok = Tokenizer::load(inferlab::test::model_file("tok512.bin"));
  CHECK(tok.vocab_size() == 512);
  CHECK(tok.piece(3) == "<0x00>");
  CHECK(tok.piece(258) == "<0xFF>");
  CHECK(tok.find(" ") >= 0);
}

// ---------------------------------------------------------------------------------------------
// Bad files
// ---------------------------------------------------------------------------------------------

TEST_CASE("load rejects each kind of bad tokenizer file with a message naming the problem",
          "[tokenizer][unit]") {
  TempDir dir;
  const std::string path = dir.file("tokenizer.bin");

  // A valid 4-piece file, the base every corruption below starts from.
  TokenizerFileBuilder good(8);
  good.piece("<unk>");
  good.piece("<s>");
  good.piece("</s>");
  good.piece("hello", -1.0f);
  good.write(path);
  {
    const Tokenizer tok = Tokenizer::load(path, 4);
    REQUIRE(tok.vocab_size() == 4);
    CHECK(tok.piece(3) == "hello");
    CHECK(tok.score(3) == -1.0f);
    CHECK(tok.find("hello") == 3);
    CHECK(tok.find("nope") == -1);
  }

  SECTION("missing file") {
    const std::string missing = dir.file("no_such_tokenizer.bin");
    REQUIRE_THROWS_AS(Tokenizer::load(missing, 4), Error);
    REQUIRE_THROWS_WITH(Tokenizer::load(missing, 4),
                        Catch::Contains("no_such_tokenizer.bin") && Catch::Contains("not found"));
  }
  SECTION("empty file: truncated header") {
    TokenizerFileBuilder b(8);
    b.bytes.resize(2);
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 4),
                        Catch::Contains("truncated header") && Catch::Contains(path));
  }
  SECTION("absurd max_token_length in the header") {
    TokenizerFileBuilder b(-3);
    b.piece("a");
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 1), Catch::Contains("absurd max_token_length -3"));
  }
  SECTION("truncated piece: the file ends inside the last piece's bytes") {
    TokenizerFileBuilder b = good;
    b.bytes.resize(b.bytes.size() - 2);  // "hel" instead of "hello"
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 4), Catch::Contains("truncated piece 3"));
  }
  SECTION("truncated piece: the file ends inside a piece's length field") {
    TokenizerFileBuilder b = good;
    b.put(0.5f);
    b.bytes += "\x01\x00";  // half an int32
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 5), Catch::Contains("truncated piece 4"));
  }
  SECTION("negative piece length") {
    TokenizerFileBuilder b = good;
    b.put(0.0f);
    b.put(std::int32_t{-7});
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 5),
                        Catch::Contains("piece 4 has negative length -7"));
  }
  SECTION("piece longer than max_token_length") {
    TokenizerFileBuilder b = good;
    b.piece("much too long a piece");
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 5), Catch::Contains("piece 4 has length 21") &&
                                                      Catch::Contains("max_token_length 8"));
  }
  SECTION("fewer pieces than the model's vocabulary") {
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 32000),
                        Catch::Contains("tokenizer has 4 pieces but the model's vocabulary is "
                                        "32000"));
  }
  SECTION("more whole pieces than the model's vocabulary") {
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 3),
                        Catch::Contains("tokenizer has 4 pieces but the model's vocabulary is 3"));
  }
  SECTION("trailing bytes after the last piece") {
    TokenizerFileBuilder b = good;
    b.bytes += "xyz";
    b.write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path, 4),
                        Catch::Contains("3 trailing bytes after the 4 pieces"));
    // Without an expected count the same bytes are a truncated fifth piece.
    REQUIRE_THROWS_WITH(Tokenizer::load(path), Catch::Contains("truncated piece 4"));
  }
  SECTION("a header and no pieces") {
    TokenizerFileBuilder(8).write(path);
    REQUIRE_THROWS_WITH(Tokenizer::load(path), Catch::Contains("no pieces"));
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding rules on a hand-made vocabulary
// ---------------------------------------------------------------------------------------------

TEST_CASE("encode: dummy prefix, byte fallback, highest score merges first, leftmost on a tie",
          "[tokenizer][unit]") {
  TempDir dir;
  const std::string path = dir.file("tiny.bin");
  TokenizerFileBuilder b(8);
  b.specials_and_bytes();  // ids 0..258
  b.piece(" ", -100.0f);   // 259
  b.piece("a", -100.0f);   // 260
  b.piece("b", -100.0f);   // 261
  b.piece("c", -100.0f);   // 262
  b.piece("ab", -5.0f);    // 263
  b.piece("bc", -5.0f);    // 264  same score as "ab": the leftmost pair must win
  b.piece("ca", -1.0f);    // 265  best score: merged before anything else
  b.piece(" a", -9.0f);    // 266
  b.piece("é", -100.0f);   // 267  a two-byte code point that is a piece
  b.write(path);
  const Tokenizer tok = Tokenizer::load(path, 268);

  CHECK(tok.encode("") == std::vector<int>{1});  // no dummy prefix for empty text
  CHECK(tok.encode("", false) == std::vector<int>{});
  CHECK(tok.encode("", false, true) == std::vector<int>{2});
  // "abc": pairs ab (-5) and bc (-5) tie, the leftmost wins: [" ", "ab", "c"]; then " a"? no,
  // the " " is now next to "ab" and " ab" is not a piece.
  CHECK(tok.encode("abc") == std::vector<int>{1, 259, 263, 262});
  // "bca": "ca" (-1) beats "bc" (-5).
  CHECK(tok.encode("bca", false) == std::vector<int>{259, 261, 265});
  // "a": " " + "a" merge into " a".
  CHECK(tok.encode("a", true, true) == std::vector<int>{1, 266, 2});
  // "é" is a piece; "ü" is not, so its two UTF-8 bytes C3 BC become byte pieces.
  CHECK(tok.encode("é", false) == std::vector<int>{259, 267});
  CHECK(tok.encode("ü", false) == std::vector<int>{259, byte_id(0xC3), byte_id(0xBC)});
  // A literal backslash and n are two characters, not a newline.
  CHECK(tok.encode("\\n", false) == std::vector<int>{259, byte_id('\\'), byte_id('n')});
  CHECK(tok.encode("\n", false) == std::vector<int>{259, byte_id('\n')});
  // The decode side gives the text back.
  CHECK(tok.decode(tok.encode("abc bca ü\\n")) == "abc bca ü\\n");
}

// ---------------------------------------------------------------------------------------------
// Decoding rules
// ---------------------------------------------------------------------------------------------

TEST_CASE("decode_piece: space after BOS, byte pieces, control tokens, bad ids",
          "[tokenizer][unit]") {
  const Tokenizer tok = Tokenizer::synthetic(512);
  const int space_a = tok.find(" a");
  REQUIRE(space_a >= 0);
  CHECK(tok.decode_piece(inferlab::kBosToken, space_a) == "a");  // the dummy prefix goes
  CHECK(tok.decode_piece(-1, space_a) == " a");
  CHECK(tok.decode_piece(space_a, space_a) == " a");
  CHECK(tok.decode_piece(space_a, byte_id('A')) == "A");
  CHECK(tok.decode_piece(space_a, byte_id(0xC3)) == "\xC3");
  CHECK(tok.decode_piece(-1, inferlab::kBosToken).empty());
  CHECK(tok.decode_piece(space_a, inferlab::kEosToken).empty());

  REQUIRE_THROWS_AS(tok.decode_piece(-1, 512), Error);
  REQUIRE_THROWS_WITH(tok.decode_piece(-1, 512),
                      Catch::Contains("512") && Catch::Contains("outside the vocabulary"));
  REQUIRE_THROWS_WITH(tok.decode_piece(-1, -1), Catch::Contains("outside the vocabulary"));
  REQUIRE_THROWS_WITH(tok.decode_piece(600, space_a), Catch::Contains("previous token id 600"));
  REQUIRE_THROWS_WITH(tok.decode({1, space_a, 100000}), Catch::Contains("100000"));
  REQUIRE_THROWS_AS(tok.piece(-2), Error);
  REQUIRE_THROWS_AS(tok.score(512), Error);
}

TEST_CASE("StreamDecoder never emits half a UTF-8 character and drops invalid bytes",
          "[tokenizer][unit]") {
  const Tokenizer tok = Tokenizer::synthetic(512);
  const int x = tok.find("x");
  REQUIRE(x >= 0);
  StreamDecoder stream(tok);

  SECTION("a two-byte character split over two byte tokens") {
    CHECK(stream.push(x, byte_id(0xC3)).empty());
    CHECK(stream.push(byte_id(0xC3), byte_id(0xA9)) == "é");
  }
  SECTION("a four-byte character split over four byte tokens, then ASCII") {
    const std::string llama = "\xF0\x9F\xA6\x99";  // U+1F999
    std::string out;
    for (std::size_t i = 0; i < llama.size(); ++i) {
      out = stream.push(x, byte_id(static_cast<unsigned char>(llama[i])));
      if (i + 1 < llama.size()) CHECK(out.empty());
    }
    CHECK(out == llama);
    CHECK(stream.push(x, x) == "x");
  }
  SECTION("a broken sequence is dropped and the byte that broke it still counts") {
    CHECK(stream.push(x, byte_id(0xC3)).empty());
    CHECK(stream.push(x, x) == "x");
  }
  SECTION("bytes that cannot start a character are dropped") {
    CHECK(stream.push(x, byte_id(0xA9)).empty());  // stray continuation
    CHECK(stream.push(x, byte_id(0xFF)).empty());
    CHECK(stream.push(x, byte_id(0xC0)).empty());  // overlong lead
    CHECK(stream.push(x, x) == "x");
  }
  SECTION("overlong and surrogate forms are rejected at the second byte") {
    CHECK(stream.push(x, byte_id(0xE0)).empty());
    CHECK(stream.push(x, byte_id(0x80)).empty());  // E0 80 would be overlong
    CHECK(stream.push(x, byte_id(0x80)).empty());
    CHECK(stream.push(x, byte_id(0xED)).empty());
    CHECK(stream.push(x, byte_id(0xA0)).empty());  // ED A0 would be a surrogate
    CHECK(stream.push(x, x) == "x");
  }
  SECTION("control bytes other than whitespace are dropped, whitespace kept") {
    CHECK(stream.push(x, byte_id(0x01)).empty());
    CHECK(stream.push(x, byte_id(0x00)).empty());
    CHECK(stream.push(x, byte_id(0x7F)).empty());
    CHECK(stream.push(x, byte_id('\n')) == "\n");
    CHECK(stream.push(x, byte_id('\t')) == "\t");
  }
  SECTION("whole pieces pass through, and flush drops an unfinished character") {
    CHECK(stream.push(inferlab::kBosToken, tok.find(" a")) == "a");
    CHECK(stream.push(x, tok.find(" b")) == " b");
    CHECK(stream.push(x, byte_id(0xE2)).empty());
    CHECK(stream.flush().empty());
    // After the flush nothing is held: a continuation byte alone is dropped.
    CHECK(stream.push(x, byte_id(0x82)).empty());
    CHECK(stream.push(x, x) == "x");
  }
}

// ---------------------------------------------------------------------------------------------
// Synthetic tokenizer
// ---------------------------------------------------------------------------------------------

TEST_CASE("synthetic tokenizer: layout, merges and a lossless round trip", "[tokenizer][unit]") {
  REQUIRE_THROWS_WITH(Tokenizer::synthetic(300), Catch::Contains("at least 354"));
  CHECK(Tokenizer::synthetic(354).vocab_size() == 354);

  for (const int vocab : {354, 512, 32000}) {
    INFO("vocab " << vocab);
    const Tokenizer tok = Tokenizer::synthetic(vocab);
    REQUIRE(tok.vocab_size() == vocab);
    CHECK(tok.piece(inferlab::kBosToken) == "<s>");
    CHECK(tok.piece(3) == "<0x00>");
    CHECK(tok.piece(258) == "<0xFF>");
    CHECK(tok.piece(259) == " ");
    // Every piece is distinct, so find() gives each id back.
    int first_not_found = -1;
    for (int id = 0; id < vocab && first_not_found < 0; ++id) {
      if (tok.find(tok.piece(id)) != id) first_not_found = id;
    }
    CHECK(first_not_found == -1);

    const std::vector<std::string> texts = {
        "",
        "hello world",
        " leading space",
        "Once upon a time, there was a little girl named Lily.",
        "tabs\tand\nnewlines \\n {\"json\": [1, 2]} ~`|",
        "trailing spaces   ",
        "UPPER lower 0123456789 !@#$%^&*()_+-=",
    };
    for (const std::string& text : texts) {
      INFO("text: '" << text << "'");
      const std::vector<int> ids = tok.encode(text);
      CHECK(tok.decode(ids) == text);
      CHECK(tok.decode(tok.encode(text, true, true)) == text);
    }
    if (vocab >= 512) {
      // With merges available, lowercase text takes fewer tokens than characters.
      const std::string text = "the cat sat on the mat";
      CHECK(tok.encode(text).size() < text.size());
    }
  }
}

TEST_CASE("stream_text prints a finished sequence as a StreamDecoder does, up to the final BOS",
          "[tokenizer][unit]") {
  const Tokenizer t = Tokenizer::synthetic(512);
  const auto byte = [](unsigned char b) { return 3 + int(b); };  // byte pieces: ids 3..258
  const int bos = inferlab::kBosToken;
  // 'a', then U+00E9 in two byte pieces, then the end-of-text BOS and a token after it.
  const std::vector<int> tokens = {bos, byte('a'), byte(0xC3), byte(0xA9), bos, byte('b')};
  CHECK(inferlab::stream_text(t, tokens, 2) == "a\xC3\xA9");
  // A character cut off at the end is dropped, as flush() drops it.
  CHECK(inferlab::stream_text(t, {bos, byte('a'), byte(0xC3)}, 2) == "a");
}
