#pragma once
// The RoPE tables of the llama2.c legacy layout (internal to common/src/model/).
#include "inferlab/model/model_config.hpp"

namespace inferlab {

// Fills the legacy body's freq_cis_real then freq_cis_imag tables (S x hs/2 each) with their
// true values, so a model written as a llama2.c checkpoint holds what llama2.c's export writes
// (the forward passes recompute the rotation and never read them).
void fill_legacy_rope_tables(const ModelConfig& c, float* tables);

}  // namespace inferlab
