// The transformer forward pass on the CPU.
#include "inferlab/forward.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/rmsnorm.hpp"
#include "inferlab/kernels/rope.hpp"
#include "inferlab/kernels/swiglu.hpp"

namespace inferlab {

namespace k = kernels;

ForwardPass::ForwardPass(const Model& model) : model_(&model) {}

void ForwardPass::reserve(int T) {
  if (T <= capacity_) return;
  const ModelConfig& c = model_->config();
  const std::size_t t = T;
  x_.resize(t * c.dim);
  xb_.resize(t * c.dim);
  q_.resize(t * c.dim);
  k_.resize(t * c.kv_dim());
  v_.resize(t * c.kv_dim());
  att_.resize(t * c.dim);
  out_.resize(t * c.dim);
  hb_.resize(t * c.hidden_dim);
  hb2_.resize(t * c.hidden_dim);
  pos_.resize(t);
  capacity_ = T;
}

void ForwardPass::forward(std::span<const int> tokens, int start_pos, KVCache& cache,
                          LogitsMode mode, std::vector<float>& logits) {
  const ModelConfig& c = model_->config();
  const Weights& w = model_->weights();
  const int T = static_cast<int>(tokens.size());
  if (T == 0) throw Error("forward: no tokens");
  if (cache.length() != start_pos) {
    throw Error(fmt::format("forward: cache holds {} positions but start_pos is {}", cache.length(),
                            start_pos));
  }
  if (start_pos + T > cache.capacity()) {
    throw Error(fmt::format("forward: positions {}..{} exceed the context of {} tokens", start_pos,
                            start_pos + T - 1, cache.capacity()));
  }
  for (int tok : tokens) {
    if (tok < 0 || tok >= c.vocab_size)
      throw Error(fmt::format("forward: token id {} outside [0, {})", tok, c.vocab_size));
  }
  reserve(T);
  const int D = c.dim, H = c.hidden_dim, KV = c.kv_dim(), hs = c.head_size();
  const std::size_t DD = std::size_t(D) * D, KVD = std::size_t(KV) * D, HD = std::size_t(H) * D;

  // x (T, D): the residual stream starts as the token embeddings.
  for (int t = 0; t < T; ++t) {
    std::memcpy(&x_[std::size_t(t) * D], w.token_embedding + std::size_t(tokens[t]) * D,
                sizeof(float) * D);
    pos_[t] = start_pos + t;
  }

  for (int l = 0; l < c.n_layers; ++l) {
    // --- attention block ---
    k::rmsnorm_cpu(xb_.data(), x_.data(), w.rms_att + std::size_t(l) * D, T, D, c.norm_eps);
    k::matmul_cpu(q_.data(), xb_.data(), w.wq + l * DD, T, D, D);
    k::matmul_cpu(k_.data(), xb_.data(), w.wk + l * KVD, T, D, KV);
    k::matmul_cpu(v_.data(), xb_.data(), w.wv + l * KVD, T, D, KV);
    k::rope_cpu(q_.data(), k_.data(), pos_.data(), T, c.n_heads, c.n_kv_heads, hs, c.rope_theta);
    // The new keys and values join the cache (converted to its storage type) before attention,
    // so each token attends to itself and to everything before it.
    cache.store(l, start_pos, T, k_.data(), v_.data());
    k::attention_kv_cpu(att_.data(), q_.data(), cache.keys(l), cache.values(l), pos_.data(), T,
                        c.n_heads, c.n_kv_heads, hs);
    k::matmul_cpu(out_.data(), att_.data(), w.wo + l * DD, T, D, D);
    for (std::size_t i = 0; i < std::size_t(T) * D; ++i) x_[i] += out_[i];

    // --- feed-forward block: w2( silu(w1 x) * w3 x ) ---
    k::rmsnorm_cpu(xb_.data(), x_.data(), w.rms_ffn + std::size_t(l) * D, T, D, c.norm_eps);
    k::matmul_cpu(hb_.data(), xb_.data(), w.w1 + l * HD, T, D, H);
    k::matmul_cpu(hb2_.data(), xb_.data(), w.w3 + l * HD, T, D, H);
    k::swiglu_cpu(hb_.data(), hb_.data(), hb2_.data(), long(T) * H);
    k::matmul_cpu(out_.data(), hb_.data(), w.w2 + l * HD, T, H, D);
    for (std::size_t i = 0; i < std::size_t(T) * D; ++i) x_[i] += out_[i];
  }
  cache.set_length(start_pos + T);

  // Only the rows that are asked for go through the final norm and the (large) classifier.
  const int first = mode == LogitsMode::all ? 0 : T - 1;
  const int rows = T - first;
  k::rmsnorm_cpu(xb_.data(), x_.data() + std::size_t(first) * D, w.rms_final, rows, D, c.norm_eps);
  logits.resize(std::size_t(rows) * c.vocab_size);
  k::matmul_cpu(logits.data(), xb_.data(), w.wcls, rows, D, c.vocab_size);
}

std::vector<float> naive_logits(ForwardPass& pass, std::span<const int> tokens, KVType kv_type) {
  // A fresh cache sized for exactly this sequence: nothing is remembered between calls.
  KVCache cache(pass.model().config(), static_cast<int>(tokens.size()), kv_type);
  std::vector<float> logits;
  pass.forward(tokens, 0, cache, LogitsMode::last, logits);
  return logits;
}

}  // namespace inferlab
