// Fuzz target: a MaskBench file on arbitrary bytes, read as ch08 --maskbench reads one (the
// checked JSON parse, then the protocol over its tests) with a small synthetic vocabulary.
// Anything malformed must be refused with inferlab::Error or reported in the result as the
// file's own error; a file that runs must count its tests as the file labels them.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "inferlab/constrain/maskbench.hpp"
#include "inferlab/model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const inferlab::Tokenizer tokenizer = inferlab::Tokenizer::synthetic(512);
  static const inferlab::MaskBenchVocab vocab(tokenizer);
  try {
    const nlohmann::ordered_json file = inferlab::parse_json_input(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const inferlab::MaskBenchResult r =
        inferlab::run_maskbench(file, "fuzz.json", vocab, /*time_limit_s=*/5.0);
    if (r.num_valid_tests < 0 || r.num_invalid_tests < 0 || r.num_tokens < 0) std::abort();
    if (r.invalid_accepted && r.validation_error.empty()) std::abort();
  } catch (const inferlab::Error&) {
  }
  return 0;
}
