#pragma once
// What the model-file tests share: a small GQA shape whose every row length (64 and 96) is whole
// 32-number blocks (Q8_0, Q4_0, Q4_1), and a token sequence's logits by the naive loop.

#include <vector>

#include "inferlab/model/model.hpp"
#include "inferlab/runtime/forward.hpp"

namespace inferlab::test {

/// Two layers, 8 query heads sharing 4 KV heads, a 96-token vocabulary; @p shared ties the
/// classifier to the embedding table.
inline ModelConfig small_block_config(bool shared) {
  ModelConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 96;
  c.seq_len = 32;
  c.shared_classifier = shared;
  return c;
}

/// The logits after each of @p tokens, one forward pass per prefix (chapter 01's loop).
inline std::vector<float> logits_of(const Model& m, const std::vector<int>& tokens) {
  ForwardPass pass(m);
  return naive_logits(pass, tokens);
}

}  // namespace inferlab::test
