// Fuzz target: Tokenizer::encode on arbitrary text (any bytes, not only UTF-8) with a fixed
// vocabulary (the synthetic one, which has every byte piece). Checks, for every input: the ids
// equal run.c's quadratic encoder's, every id is in the vocabulary, and decoding gives the text
// back byte for byte.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "../tests/bpe_reference.hpp"
#include "inferlab/model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const inferlab::Tokenizer t = inferlab::Tokenizer::synthetic(1200);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<int> ids = t.encode(text);  // never throws: every byte has its piece
  for (int id : ids)
    if (id < 0 || id >= t.vocab_size()) std::abort();
  if (size <= 2048 && ids != inferlab::test::reference_encode(t, text)) std::abort();
  if (t.decode(ids) != text) std::abort();  // lossless, dummy prefix removed
  return 0;
}
