// Fuzz target: Tokenizer::load on arbitrary bytes, then, for what loads, encoding a fixed text:
// the priority-queue encoder must give run.c's quadratic encoder's ids whatever the pieces and
// scores (ties, duplicates, missing byte pieces), and ids must decode.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "../tests/bpe_reference.hpp"
#include "fuzz_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const inferlab::fuzz::MemoryFile file(data, size);
  try {
    const inferlab::Tokenizer t = inferlab::Tokenizer::load(file.path());
    if (t.vocab_size() < 1) std::abort();
    for (const char* text : {"Once upon a time", "aaaa bbbb", "x\xC3\xA9y", ""}) {
      std::vector<int> got, want;
      bool got_ok = true, want_ok = true;
      try {
        got = t.encode(text);
      } catch (const inferlab::Error&) {
        got_ok = false;
      }
      try {
        want = inferlab::test::reference_encode(t, text);
      } catch (const inferlab::Error&) {
        want_ok = false;
      }
      if (got_ok && want_ok && got != want) std::abort();  // the two encoders disagree
      if (got_ok) (void)t.decode(got);
    }
  } catch (const inferlab::Error&) {
  }
  return 0;
}
