// Fuzz target: GgufFile::open on arbitrary bytes (fuzz_model_loader runs Model::load, which
// reads GGUF models too). Anything but a valid file must be refused with inferlab::Error (any
// other exception, a crash or a sanitizer report is a bug); what opens must be
// self-consistent: every value readable as its type, every tensor's bytes inside the file.
#include <cstdint>
#include <cstdlib>

#include "fuzz_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/gguf.hpp"

namespace {

void read_every_value(const inferlab::GgufFile& f) {
  using inferlab::GgufType;
  for (const inferlab::GgufValue& v : f.metadata()) {
    try {
      if (v.type == GgufType::kString) {
        if (f.get_string(v.key).size() != v.bytes) std::abort();
      } else if (v.type == GgufType::kArray && v.element_type == GgufType::kString) {
        if (f.get_array<std::string_view>(v.key).size() != v.count) std::abort();
      } else if (v.type == GgufType::kArray) {
        (void)f.get_array<float>(v.key);
      } else if (v.type == GgufType::kF32 || v.type == GgufType::kF64) {
        (void)f.get_f32(v.key);
      } else if (v.type == GgufType::kBool) {
        (void)f.get_bool(v.key);
      } else {
        (void)f.get_i64(v.key);
      }
    } catch (const inferlab::Error&) {
      // An integer array read as floats, an i64 out of range: refused, not misread.
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const inferlab::fuzz::MemoryFile file(data, size);
  try {
    const inferlab::GgufFile f = inferlab::GgufFile::open(file.path());
    read_every_value(f);
    volatile std::uint8_t sink = 0;
    for (const inferlab::GgufTensor& t : f.tensors()) {
      if (f.data_offset() + t.offset + t.n_bytes > size) std::abort();
      sink = sink + t.data[0] + t.data[t.n_bytes - 1];
    }
    (void)sink;
  } catch (const inferlab::Error&) {
  }
  return 0;
}
