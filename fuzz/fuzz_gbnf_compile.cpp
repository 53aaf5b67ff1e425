// Fuzz target: the GBNF compiler on arbitrary text (fuzz_constraint.hpp: what must hold).
#include "fuzz_constraint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return inferlab::fuzz::fuzz_constraint(inferlab::ConstraintKind::gbnf, data, size);
}
