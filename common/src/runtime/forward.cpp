// The transformer forward pass on the CPU.
#include "inferlab/runtime/forward.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/quant_matmul.hpp"
#include "inferlab/kernels/rmsnorm.hpp"
#include "inferlab/kernels/rope.hpp"
#include "inferlab/kernels/swiglu.hpp"

namespace inferlab {

namespace k = kernels;

namespace {

// For the n rows from start of one entry: RoPE positions into pos (n), and the visible rows of
// each, appended as n + 1 offsets to begin and the lists to rows. Rows below base are causal;
// a tree row sees the prefix, then its ancestors and itself in ascending row order.
void tree_layout(const TreeMask& tree, int start, int n, int* pos, std::vector<int>& begin,
                 std::vector<int>& rows) {
  std::vector<int> path;
  for (int i = 0; i < n; ++i) {
    const int r = start + i;
    begin.push_back(static_cast<int>(rows.size()));
    const int prefix = r < tree.base ? r + 1 : tree.base;
    for (int s = 0; s < prefix; ++s) rows.push_back(s);
    if (r < tree.base) continue;  // causal row: pos already start + i
    path.clear();
    for (int a = r; a != -1; a = tree.parents[std::size_t(a - tree.base)]) path.push_back(a);
    pos[i] = tree.base + static_cast<int>(path.size()) - 1;
    rows.insert(rows.end(), path.rbegin(), path.rend());
  }
  begin.push_back(static_cast<int>(rows.size()));
}

// y (T, d) = x (T, n) W^T, W as the model stores it: float32 packed panels or block rows.
void linear(float* y, const float* x, const LinearWeight& w, int T) {
  if (w.is_stored()) {
    k::matmul_quant(y, x, w.stored, T);
  } else {
    k::matmul_packed(y, x, w.packed, T);
  }
}

}  // namespace

ForwardPass::ForwardPass(const Model& model)
    : model_(&model),
      linears_(&model.cpu_linears()),
      rope_inv_freq_(model.config().rope_inv_freq()) {}

void ForwardPass::reserve(int T) {
  if (T <= capacity_) return;
  const ModelConfig& c = model_->config();
  const std::size_t t = T;
  x_.resize(t * c.dim);
  xb_.resize(t * c.dim);
  q_.resize(t * c.q_dim());
  k_.resize(t * c.kv_dim());
  v_.resize(t * c.kv_dim());
  att_.resize(t * c.q_dim());
  out_.resize(t * c.dim);
  hb_.resize(t * c.hidden_dim);
  hb2_.resize(t * c.hidden_dim);
  pos_.resize(t);
  capacity_ = T;
}

void ForwardPass::forward(std::span<const int> tokens, int start_pos, KVSequence& cache,
                          LogitsMode mode, std::vector<float>& logits, const TreeMask* tree) {
  const BatchEntry entry{tokens, start_pos, &cache, tree};
  run(std::span<const BatchEntry>(&entry, 1), mode == LogitsMode::all, logits);
}

void ForwardPass::forward_batch(std::span<const BatchEntry> batch, std::vector<float>& logits,
                                LogitsMode mode) {
  run(batch, mode == LogitsMode::all, logits);
}

void ForwardPass::run(std::span<const BatchEntry> batch, bool all_rows,
                      std::vector<float>& logits) {
  const ModelConfig& c = model_->config();
  const Weights& w = model_->weights();
  // Validate every entry before touching any cache, so a bad request changes nothing.
  validate_batch(batch, c);
  int T = 0;
  for (const BatchEntry& e : batch) {
    if (e.cache->pool().device() != Device::cpu) {
      throw Error(
          fmt::format("forward: the CPU forward pass needs a host KV pool, not one on "
                      "the {}",
                      device_name(e.cache->pool().device())));
    }
    T += static_cast<int>(e.tokens.size());
  }
  reserve(T);
  const int D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), hs = c.head_size();
  const CpuLinears& pw = *linears_;  // the linear weights, as linear() reads them

  // x (T, D): the residual stream starts as the token embeddings of every entry, back to back.
  {
    int t = 0;
    for (const BatchEntry& e : batch) {
      for (std::size_t i = 0; i < e.tokens.size(); ++i, ++t) {
        model_->embedding_row(e.tokens[i], &x_[std::size_t(t) * D]);
        pos_[t] = e.start_pos + static_cast<int>(i);
      }
    }
  }
  // Tree entries: RoPE positions by depth, and the rows each token may see (tree_begin_ holds
  // one offset list per tree entry, back to back; entries without a tree add nothing).
  tree_begin_.clear();
  tree_rows_.clear();
  {
    int t = 0;
    for (const BatchEntry& e : batch) {
      const int n = static_cast<int>(e.tokens.size());
      if (e.tree) tree_layout(*e.tree, e.start_pos, n, &pos_[t], tree_begin_, tree_rows_);
      t += n;
    }
  }

  for (int l = 0; l < c.n_layers; ++l) {
    // --- attention block ---
    // The linear layers see all T tokens of the step as one matrix: the weights are read once
    // for the whole batch (the reason batching pays on a memory-bound machine).
    k::rmsnorm_cpu(xb_.data(), x_.data(), w.rms_att + std::size_t(l) * D, T, D, c.norm_eps);
    linear(q_.data(), xb_.data(), pw.wq[l], T);
    linear(k_.data(), xb_.data(), pw.wk[l], T);
    linear(v_.data(), xb_.data(), pw.wv[l], T);
    k::rope_cpu(q_.data(), k_.data(), pos_.data(), T, c.n_heads, c.n_kv_heads, hs,
                rope_inv_freq_.data());
    // Attention is per sequence: each entry's new keys and values join its own cache (converted
    // to its storage type) before its queries attend over it, itself included.
    int t = 0;
    std::size_t tree_offset = 0;  // this entry's first offset in tree_begin_
    for (const BatchEntry& e : batch) {
      const int n = static_cast<int>(e.tokens.size());
      e.cache->store(l, e.start_pos, n, &k_[std::size_t(t) * KV], &v_[std::size_t(t) * KV]);
      if (e.tree) {
        k::attention_kv_rows_cpu(&att_[std::size_t(t) * Q], &q_[std::size_t(t) * Q],
                                 e.cache->keys(l), e.cache->values(l), &tree_begin_[tree_offset],
                                 tree_rows_.data(), n, c.n_heads, c.n_kv_heads, hs);
        tree_offset += std::size_t(n) + 1;
      } else {
        k::attention_kv_cpu(&att_[std::size_t(t) * Q], &q_[std::size_t(t) * Q], e.cache->keys(l),
                            e.cache->values(l), &pos_[t], n, c.n_heads, c.n_kv_heads, hs);
      }
      t += n;
    }
    linear(out_.data(), att_.data(), pw.wo[l], T);
    for (std::size_t i = 0; i < std::size_t(T) * D; ++i) x_[i] += out_[i];

    // --- feed-forward block: w2( silu(w1 x) * w3 x ) ---
    k::rmsnorm_cpu(xb_.data(), x_.data(), w.rms_ffn + std::size_t(l) * D, T, D, c.norm_eps);
    linear(hb_.data(), xb_.data(), pw.w1[l], T);
    linear(hb2_.data(), xb_.data(), pw.w3[l], T);
    k::swiglu_cpu(hb_.data(), hb_.data(), hb2_.data(), long(T) * H);
    linear(out_.data(), hb_.data(), pw.w2[l], T);
    for (std::size_t i = 0; i < std::size_t(T) * D; ++i) x_[i] += out_[i];
  }
  for (const BatchEntry& e : batch) e.cache->set_length(e.start_pos + int(e.tokens.size()));

  // Only the rows that are asked for go through the final norm and the (large) classifier:
  // every row, or the last token of each entry (the one generation samples from).
  int rows = 0;
  if (all_rows) {
    rows = T;
    std::copy(x_.begin(), x_.begin() + std::ptrdiff_t(T) * D, xb_.begin());
  } else {
    int t = 0;
    for (const BatchEntry& e : batch) {
      t += static_cast<int>(e.tokens.size());
      std::memcpy(&xb_[std::size_t(rows++) * D], &x_[std::size_t(t - 1) * D], sizeof(float) * D);
    }
  }
  k::rmsnorm_cpu(xb_.data(), xb_.data(), w.rms_final, rows, D, c.norm_eps);
  logits.resize(std::size_t(rows) * c.vocab_size);
  linear(logits.data(), xb_.data(), pw.wcls, rows);
}

std::vector<float> naive_logits(ForwardPass& pass, std::span<const int> tokens, DType kv_type) {
  // A fresh cache sized for exactly this sequence: nothing is remembered between calls.
  KVCache cache(pass.model().config(), static_cast<int>(tokens.size()), kv_type);
  std::vector<float> logits;
  pass.forward(tokens, 0, cache, LogitsMode::last, logits);
  return logits;
}

}  // namespace inferlab
