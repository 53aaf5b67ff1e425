// Fuzz target: Model::load on arbitrary bytes. Anything but a valid llama2.c checkpoint or GGUF
// model must be refused with inferlab::Error (any other exception, a crash or a sanitizer
// report is a bug); what loads must be self-consistent.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const inferlab::fuzz::MemoryFile file(data, size);
  try {
    const inferlab::Model m = inferlab::Model::load(file.path());
    const inferlab::ModelConfig& c = m.config();
    // A llama2.c checkpoint holds exactly the bytes its header implies.
    if (m.load_note().empty() && inferlab::Model::file_size_for(c) != size) std::abort();
    if (c.dim <= 0 || c.n_heads <= 0 || c.dim % c.n_heads != 0) std::abort();
    // Touch the first and last weights the forward pass would read: they must be mapped
    // (a model stored in a block format holds float pointers for its norms only).
    const inferlab::Weights& w = m.weights();
    std::vector<float> row(std::size_t(c.dim));
    m.embedding_row(c.vocab_size - 1, row.data());
    volatile float sink = row[0] + w.rms_final[c.dim - 1] +
                          (m.float_weights() ? w.wcls[std::size_t(c.vocab_size) * c.dim - 1]
                                             : 0.0f);
    (void)sink;
  } catch (const inferlab::Error&) {
  }
  return 0;
}
