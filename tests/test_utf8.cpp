// The UTF-8 decoder (base/utf8.hpp) against Unicode's table 3-7, and against an encoder for every
// code point, and what the grammar and regex front ends do with bytes that are not UTF-8.
#include <cstdint>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/base/utf8.hpp"
#include "inferlab/constrain/gbnf.hpp"
#include "inferlab/constrain/grammar.hpp"
#include "inferlab/constrain/regex.hpp"

using namespace inferlab;

TEST_CASE("a UTF-8 lead byte gives the character's length, 0 for bytes that cannot lead",
          "[unit][utf8]") {
  CHECK(utf8_sequence_length(0x00) == 1);
  CHECK(utf8_sequence_length(0x7F) == 1);
  for (int b = 0x80; b <= 0xC1; ++b)
    CHECK(utf8_sequence_length(static_cast<unsigned char>(b)) == 0);
  CHECK(utf8_sequence_length(0xC2) == 2);
  CHECK(utf8_sequence_length(0xDF) == 2);
  CHECK(utf8_sequence_length(0xE0) == 3);
  CHECK(utf8_sequence_length(0xEF) == 3);
  CHECK(utf8_sequence_length(0xF0) == 4);
  CHECK(utf8_sequence_length(0xF4) == 4);
  for (int b = 0xF5; b <= 0xFF; ++b)
    CHECK(utf8_sequence_length(static_cast<unsigned char>(b)) == 0);
}

TEST_CASE("continuation bytes are 80-BF", "[unit][utf8]") {
  for (int b = 0; b <= 0xFF; ++b)
    CHECK(utf8_is_continuation(static_cast<unsigned char>(b)) == (b >= 0x80 && b <= 0xBF));
}

TEST_CASE("the second byte's range is narrower after E0, ED, F0 and F4", "[unit][utf8]") {
  CHECK_FALSE(utf8_continues(0xE0, 1, 0x9F));  // overlong
  CHECK(utf8_continues(0xE0, 1, 0xA0));
  CHECK(utf8_continues(0xED, 1, 0x9F));
  CHECK_FALSE(utf8_continues(0xED, 1, 0xA0));  // a UTF-16 surrogate
  CHECK_FALSE(utf8_continues(0xF0, 1, 0x8F));  // overlong
  CHECK(utf8_continues(0xF0, 1, 0x90));
  CHECK(utf8_continues(0xF4, 1, 0x8F));
  CHECK_FALSE(utf8_continues(0xF4, 1, 0x90));  // above U+10FFFF
  // Later bytes, and every byte after other leads: 80-BF.
  for (unsigned char lead : {0xC2, 0xE0, 0xE1, 0xED, 0xF0, 0xF4}) {
    for (std::size_t index : {std::size_t{2}, std::size_t{3}}) {
      CHECK_FALSE(utf8_continues(lead, index, 0x7F));
      CHECK(utf8_continues(lead, index, 0x80));
      CHECK(utf8_continues(lead, index, 0xBF));
      CHECK_FALSE(utf8_continues(lead, index, 0xC0));
    }
  }
  CHECK_FALSE(utf8_continues(0xC2, 1, 0x41));
}

TEST_CASE("every code point decodes back from its encoding, and surrogates do not", "[unit][utf8]") {
  std::uint32_t wrong = 0, first_wrong = 0;
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    std::string bytes;
    append_utf8(bytes, cp);
    const Utf8Char c = decode_utf8("x" + bytes, 1);
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    const bool right =
        surrogate ? c.length == 0 : c.code_point == cp && c.length == int(bytes.size());
    if (!right && wrong++ == 0) first_wrong = cp;
  }
  INFO("first wrong code point: " << first_wrong);
  CHECK(wrong == 0);
}

TEST_CASE("bytes that are not UTF-8 decode to length 0", "[unit][utf8]") {
  CHECK(decode_utf8("\xC3", 0).length == 0);  // the text ends inside it
  CHECK(decode_utf8("\xC3"
                    "A",
                    0)
            .length == 0);                                // not a continuation byte
  CHECK(decode_utf8("\xC0\xAF", 0).length == 0);          // overlong '/'
  CHECK(decode_utf8("\xE0\x80\xAF", 0).length == 0);      // overlong '/'
  CHECK(decode_utf8("\xED\xA0\x80", 0).length == 0);      // U+D800
  CHECK(decode_utf8("\xF4\x90\x80\x80", 0).length == 0);  // U+110000
  CHECK(decode_utf8("\xF8\x88\x80\x80\x80", 0).length == 0);
  CHECK(decode_utf8("\xBF", 0).length == 0);  // a stray continuation byte
  const Utf8Char llama = decode_utf8("\xF0\x9F\xA6\x99", 0);
  CHECK(llama.code_point == 0x1F999);
  CHECK(llama.length == 4);
}

TEST_CASE("grammars and patterns that are not UTF-8 are refused, not misread", "[unit][utf8]") {
  // \xC0\xAF would read as '/' if the lead alone decided the length.
  CHECK_THROWS_AS(parse_gbnf("root ::= \"a\xC0\xAF\""), Error);
  CHECK_THROWS_AS(parse_gbnf("root ::= [\xED\xA0\x80]"), Error);
  CHECK_THROWS_AS(regex_grammar("a\xC0\xAF"), Error);
  CHECK_THROWS_AS(regex_grammar("[\xF4\x90\x80\x80]"), Error);
  CHECK_NOTHROW(parse_gbnf("root ::= \"na\xC3\xAFve\""));
  CHECK_NOTHROW(regex_grammar("na\xC3\xAFve"));
}
