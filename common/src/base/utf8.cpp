// Decoding UTF-8 by Unicode's table 3-7 (see utf8.hpp).
#include "inferlab/base/utf8.hpp"

namespace inferlab {

int utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool utf8_continues(unsigned char lead, std::size_t index, unsigned char b) {
  unsigned char lo = 0x80, hi = 0xBF;
  if (index == 1) {
    switch (lead) {
      case 0xE0:
        lo = 0xA0;
        break;
      case 0xED:
        hi = 0x9F;
        break;
      case 0xF0:
        lo = 0x90;
        break;
      case 0xF4:
        hi = 0x8F;
        break;
      default:
        break;
    }
  }
  return b >= lo && b <= hi;
}

Utf8Char decode_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const int n = utf8_sequence_length(lead);
  if (n == 0 || pos + static_cast<std::size_t>(n) > text.size()) return {};
  // The lead keeps its low 7 - n bits (all 7 for ASCII), each continuation byte its low 6.
  std::uint32_t cp = n == 1 ? lead : lead & (0xFFu >> (n + 1));
  for (int i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(text[pos + static_cast<std::size_t>(i)]);
    if (!utf8_continues(lead, static_cast<std::size_t>(i), b)) return {};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {cp, n};
}

}  // namespace inferlab
