#pragma once
/// @file utf8.hpp
/// @brief Decoding UTF-8, the one decoder the tokenizer's stream printer, the input checks and
/// the grammar and regex front ends share.
///
/// Well-formed UTF-8 is Unicode's table 3-7: a lead byte says how many bytes the character
/// takes (00-7F: 1; C2-DF: 2; E0-EF: 3; F0-F4: 4), and each following byte is a continuation
/// byte 80-BF, except that the second byte is narrower after four leads: A0-BF after E0 and
/// 90-BF after F0 (no overlong forms), 80-9F after ED (no UTF-16 surrogates) and 80-8F after
/// F4 (nothing above U+10FFFF). C0, C1 and F5-FF never appear.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace inferlab {

/// @brief Whether @p b is a continuation byte (80-BF), never the first byte of a character.
inline bool utf8_is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

/// @brief Bytes of the character that @p lead starts: 1 to 4, or 0 if @p lead cannot start
/// one (a continuation byte 80-BF, the overlong leads C0 and C1, or F5-FF).
int utf8_sequence_length(unsigned char lead);

/// @brief Whether @p b may be byte @p index (1 for the second byte, up to 3) of a character
/// that @p lead starts (lead as accepted by utf8_sequence_length()).
/// @param lead the character's first byte
/// @param index the position of @p b within the character, >= 1
/// @param b the byte to check
/// @return true for a continuation byte in the range table 3-7 allows at that position
bool utf8_continues(unsigned char lead, std::size_t index, unsigned char b);

/// @brief One decoded character.
struct Utf8Char {
  std::uint32_t code_point = 0;  ///< U+0000 to U+10FFFF, never a surrogate
  int length = 0;                ///< bytes it took, 1 to 4; 0 when the bytes are not UTF-8
};

/// @brief Decodes the character that starts at byte @p pos of @p text.
/// @param text the bytes
/// @param pos where the character starts (< text.size())
/// @return the code point and its length in bytes, or length 0 when the bytes at @p pos are not
/// a well-formed character (a bad lead, a bad continuation byte, or the text ends inside it)
Utf8Char decode_utf8(std::string_view text, std::size_t pos);

}  // namespace inferlab
