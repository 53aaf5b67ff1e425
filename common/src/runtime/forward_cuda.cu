// The transformer forward pass on the GPU, mirroring forward.cpp step for step: embedding; per
// layer rmsnorm -> q, k, v (k, v written straight into the pool rows) -> rope -> attention -> wo
// -> residual -> rmsnorm -> w1, w3 -> swiglu -> w2 -> residual; final rmsnorm on the rows asked
// for; classifier. Every op runs its best version (k<Op>BestVersion), all on one stream; the
// host waits only when a result is copied back (and after each quantized matmul, which frees
// its scratch). A model stored in Q8_0 or Q4_0 keeps each matrix as its blocks on the device,
// as the CPU core does: linear() picks matmul_quant_cuda for those, and the embedding rows of
// a step are dequantized on the device.
#include "forward_cuda.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common.cuh"
#include "inferlab/kernels/cuda/attention_cuda.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/cuda/matmul_cuda.hpp"
#include "inferlab/kernels/cuda/paged_attention_cuda.hpp"
#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/cuda/rmsnorm_cuda.hpp"
#include "inferlab/kernels/cuda/rope_cuda.hpp"
#include "inferlab/kernels/cuda/sampling_cuda.hpp"
#include "inferlab/kernels/cuda/swiglu_cuda.hpp"
#include "inferlab/kernels/error.hpp"

namespace inferlab::cuda {

namespace {

namespace k = inferlab::kernels;
using detail::ceil_div;

constexpr int kThreads = 256;

// x[t, :] = embedding[tokens[t], :]
__global__ void embedding_kernel(float* x, const float* embedding, const int* tokens, int T,
                                 int dim, int vocab) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(T) * dim) return;
  const int t = int(idx / dim), i = int(idx % dim);
  const int token = tokens[t];
  // The host validated the ids; an out-of-range id here would be a bug: make it loud.
  x[idx] = (token >= 0 && token < vocab) ? embedding[std::size_t(token) * dim + i] : NAN;
}

// x += delta (the residual connection)
__global__ void residual_add_kernel(float* x, const float* delta, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += delta[i];
}

// Writes the step's new keys (or values), row t of `rows` (T, KV), into pool row slot[t].
__global__ void kv_scatter_kernel(float* pool, const float* rows, const int* slot, int T,
                                  int kv_dim) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(T) * kv_dim) return;
  const int t = int(idx / kv_dim), i = int(idx % kv_dim);
  pool[std::size_t(slot[t]) * kv_dim + i] = rows[idx];
}

// dst row r = src row index[r] (D floats each): the rows that go through the classifier.
__global__ void gather_rows_kernel(float* dst, const float* src, const int* index, int rows,
                                   int dim) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(rows) * dim) return;
  const int r = int(idx / dim), i = int(idx % dim);
  dst[idx] = src[std::size_t(index[r]) * dim + i];
}

// One weight matrix on the device as linear() reads it: float32 rows or Q8_0 / Q4_0 blocks.
struct DeviceMatrix {
  k::TensorType type = k::TensorType::kF32;  // the storage of `data`
  const void* data = nullptr;                // (d, n) rows in that storage
};

// y (T, d) = x (T, n) W^T: the one place that picks the kernel for a matrix's storage, as
// linear() does on the CPU (forward.cpp).
// Block matrices quantize x into `workspace` first (the forward pass's, sized for its widest
// input): no allocation and no wait per call.
void linear(float* y, const float* x, const DeviceMatrix& w, int T, int n, int d,
            DeviceBuffer<std::uint8_t>& workspace, cudaStream_t s) {
  if (w.type == k::TensorType::kF32) {
    k::matmul_cuda(k::kMatmulBestVersion, y, x, static_cast<const float*>(w.data), T, n, d, s);
  } else {
    k::matmul_quant_cuda(y, x, static_cast<const std::uint8_t*>(w.data), w.type, T, n, d,
                         workspace.data(), workspace.bytes(), s);
  }
}

// The matrices of one layer, each as linear() reads it.
struct LayerMatrices {
  DeviceMatrix wq, wk, wv, wo, w1, w2, w3;
};

template <class T>
DeviceBuffer<T> upload_tensor(const T* host, std::size_t count, const char* name) {
  if (!host) throw Error(std::string("CUDA forward pass: weight ") + name + " missing");
  DeviceBuffer<T> buffer(count);
  buffer.upload(host, count);
  return buffer;
}

}  // namespace

// The pool's device memory and shape.
struct CudaKVPool::Impl {
  int n_layers = 0;            ///< L
  int kv_dim = 0;              ///< KV floats per row
  int num_blocks = 0;          ///< blocks
  int block_size = 0;          ///< positions per block
  DeviceBuffer<float> keys;    ///< (L, num_blocks * block_size, KV)
  DeviceBuffer<float> values;  ///< (L, num_blocks * block_size, KV)
  /// @brief Floats of one layer's keys (or values): rows * KV.
  std::size_t layer_floats() const { return std::size_t(num_blocks) * block_size * kv_dim; }
  /// @brief Floats of one block in one layer's keys (or values).
  std::size_t block_layer_floats() const { return std::size_t(block_size) * kv_dim; }
};

CudaKVPool::CudaKVPool(int n_layers, int kv_dim, int num_blocks, int block_size)
    : impl_(std::make_unique<Impl>()) {
  require_cuda_device();
  Impl& m = *impl_;
  m.n_layers = n_layers, m.kv_dim = kv_dim, m.num_blocks = num_blocks, m.block_size = block_size;
  m.keys = DeviceBuffer<float>(std::size_t(n_layers) * m.layer_floats());
  m.values = DeviceBuffer<float>(m.keys.size());
  m.keys.zero();
  m.values.zero();
}
CudaKVPool::~CudaKVPool() = default;
int CudaKVPool::n_layers() const { return impl_->n_layers; }
int CudaKVPool::kv_dim() const { return impl_->kv_dim; }
int CudaKVPool::num_blocks() const { return impl_->num_blocks; }
int CudaKVPool::block_size() const { return impl_->block_size; }
float* CudaKVPool::keys(int layer) { return impl_->keys.data() + layer * impl_->layer_floats(); }
float* CudaKVPool::values(int layer) {
  return impl_->values.data() + layer * impl_->layer_floats();
}
std::size_t CudaKVPool::block_floats() const {
  return 2 * std::size_t(impl_->n_layers) * impl_->block_layer_floats();
}

void CudaKVPool::copy_block(int src, int dst) {
  Impl& m = *impl_;
  const std::size_t n = m.block_layer_floats();
  for (int l = 0; l < m.n_layers; ++l) {
    const std::size_t base = l * m.layer_floats();
    copy_on_device(m.keys.data() + base + dst * n, m.keys.data() + base + src * n,
                   n * sizeof(float));
    copy_on_device(m.values.data() + base + dst * n, m.values.data() + base + src * n,
                   n * sizeof(float));
  }
}

void CudaKVPool::read_block(int id, float* host) const {
  const Impl& m = *impl_;
  const std::size_t n = m.block_layer_floats();
  for (int l = 0; l < m.n_layers; ++l) {
    const std::size_t base = l * m.layer_floats() + id * n;
    m.keys.download(host + (2 * l) * n, n, base);
    m.values.download(host + (2 * l + 1) * n, n, base);
  }
}

void CudaKVPool::write_block(int id, const float* host) {
  Impl& m = *impl_;
  const std::size_t n = m.block_layer_floats();
  for (int l = 0; l < m.n_layers; ++l) {
    const std::size_t base = l * m.layer_floats() + id * n;
    m.keys.upload(host + (2 * l) * n, n, base);
    m.values.upload(host + (2 * l + 1) * n, n, base);
  }
}

// The device state behind CudaForwardPass: weights, activation buffers and the stream. C below
// is `capacity`, the most tokens one step has needed so far.
struct CudaForwardPass::Impl {
  ModelConfig d;  ///< the model's dimensions (its weights are uploaded, the host pointers not kept)
  int head_size = 0;  ///< hs, floats per head (D / Nh unless the model gives its own)
  int kv_dim = 0;     ///< KV = Nkv * hs, floats of one token's keys in one layer
  Stream stream;      ///< every kernel and copy is enqueued here, in order
  // Weights, shapes as in inferlab::Weights. A float model fills the float32 buffers, a model
  // stored in blocks `blocks`; the views below point into whichever holds them.
  DeviceBuffer<float> token_embedding;  ///< (V, D) embedding table; also the classifier when shared
  DeviceBuffer<float> rms_att;          ///< (L, D) attention RMSNorm weights
  DeviceBuffer<float> wq;               ///< (L, Q, D) query projections
  DeviceBuffer<float> wk;               ///< (L, KV, D) key projections
  DeviceBuffer<float> wv;               ///< (L, KV, D) value projections
  DeviceBuffer<float> wo;               ///< (L, D, Q) attention output projections
  DeviceBuffer<float> rms_ffn;          ///< (L, D) feed-forward RMSNorm weights
  DeviceBuffer<float> w1;               ///< (L, H, D) gate projections
  DeviceBuffer<float> w2;               ///< (L, D, H) down projections
  DeviceBuffer<float> w3;               ///< (L, H, D) up projections
  DeviceBuffer<float> rms_final;        ///< (D) final RMSNorm weights
  DeviceBuffer<float> wcls_separate;    ///< (V, D) a classifier of its own; empty when shared
  DeviceBuffer<std::uint8_t> blocks;    ///< a block model's matrices, back to back (256-aligned)
  DeviceBuffer<float> rope_inv_freq;    ///< (hs/2) RoPE frequencies of a scaled model, else empty
  DeviceMatrix embedding;               ///< (V, D) the embedding table as stored
  std::vector<LayerMatrices> layers;    ///< (L) each layer's matrices as stored
  DeviceMatrix wcls;                    ///< (V, D) the classifier: its own, or the embedding
  // Activations for up to `capacity` tokens, each (C, width).
  int capacity = 0;                         ///< C: tokens the buffers hold (grown by reserve())
  DeviceBuffer<float> x;                    ///< (C, D) the residual stream
  DeviceBuffer<float> xb;                   ///< (C, D) normalised input of the current block
  DeviceBuffer<float> q;                    ///< (C, Nh*hs) queries
  DeviceBuffer<float> k_rows;               ///< (C, KV) the step's new keys before the pool
  DeviceBuffer<float> v_rows;               ///< (C, KV) the step's new values
  DeviceBuffer<float> att;                  ///< (C, Nh*hs) attention output
  DeviceBuffer<float> out;                  ///< (C, D) output of wo or w2, added to x
  DeviceBuffer<float> hb;                   ///< (C, H) w1 x, then silu(w1 x) * w3 x
  DeviceBuffer<float> hb2;                  ///< (C, H) w3 x
  DeviceBuffer<float> logits;               ///< (C, V) logits of the rows asked for
  DeviceBuffer<float> attention_workspace;  ///< attention scratch for any step of up to C tokens
  DeviceBuffer<std::uint8_t> quant_workspace;  ///< block matmuls' quantized activations (C tokens)
  DeviceBuffer<int> tokens;                 ///< (C) token ids of the step
  DeviceBuffer<int> pos;                    ///< (C) position of each token of the step
  DeviceBuffer<int> slot;                   ///< (C) pool row each token's key and value go to
  DeviceBuffer<int> token_seq;              ///< (C) the batch entry of each token
  DeviceBuffer<int> logit_rows;             ///< (rows) the tokens whose logits are computed
  DeviceBuffer<int> table_offsets;          ///< (entries) where each entry's block table starts
  DeviceBuffer<int> tables;                 ///< every entry's block table, back to back
  DeviceBuffer<int> next_token;             ///< (rows) argmax tokens chosen on the device

  /// @brief Validates @p config and checks that a device is there (the weights come next).
  explicit Impl(const ModelConfig& config);
  /// @brief Uploads a float model's @p weights (see the CudaForwardPass constructor).
  void upload(const Weights& weights);
  /// @brief Uploads a block model's @p weights, each matrix as its blocks.
  void upload(const BlockWeights& weights);
  /// @brief Uploads the norms and, for a scaled RoPE, its frequencies (both kinds of model).
  void upload_norms(const float* att, const float* ffn, const float* final_norm);
  /// @brief Grows the activation buffers to hold @p T tokens (no-op when capacity >= T).
  void reserve(int T);
  /// @brief The ragged batched step of CudaForwardPass::forward_batch, logits left in `logits`;
  /// returns their rows.
  int run(const CudaBatchEntry* entries, int n, CudaKVPool& pool, bool all_logits);
};

CudaForwardPass::Impl::Impl(const ModelConfig& config) : d(config) {
  d.validate("CUDA forward pass");
  head_size = d.head_size();
  kv_dim = d.kv_dim();
  require_cuda_device();
}

void CudaForwardPass::Impl::upload_norms(const float* att, const float* ffn,
                                         const float* final_norm) {
  const std::size_t D = d.dim, L = d.n_layers;
  rms_att = upload_tensor(att, L * D, "rms_att");
  rms_ffn = upload_tensor(ffn, L * D, "rms_ffn");
  rms_final = upload_tensor(final_norm, D, "rms_final");
  if (d.rope_scaling != RopeScaling::none || !d.rope_freq_factors.empty()) {
    const std::vector<float> inv_freq = d.rope_inv_freq();
    rope_inv_freq = upload_tensor(inv_freq.data(), inv_freq.size(), "rope_inv_freq");
  }
  // The host pointers are not kept: the caller may free its weights after construction.
  stream.synchronize();
}

void CudaForwardPass::Impl::upload(const Weights& w) {
  const std::size_t D = d.dim, H = d.hidden_dim, L = d.n_layers, V = d.vocab_size, KV = kv_dim;
  const std::size_t Q = d.q_dim();
  token_embedding = upload_tensor(w.token_embedding, V * D, "token_embedding");
  wq = upload_tensor(w.wq, L * Q * D, "wq");
  wk = upload_tensor(w.wk, L * KV * D, "wk");
  wv = upload_tensor(w.wv, L * KV * D, "wv");
  wo = upload_tensor(w.wo, L * D * Q, "wo");
  w1 = upload_tensor(w.w1, L * H * D, "w1");
  w2 = upload_tensor(w.w2, L * D * H, "w2");
  w3 = upload_tensor(w.w3, L * H * D, "w3");
  embedding = {k::TensorType::kF32, token_embedding.data()};
  if (w.wcls == nullptr || w.wcls == w.token_embedding) {
    wcls = embedding;  // shared classifier: one copy on the device too
  } else {
    wcls_separate = upload_tensor(w.wcls, V * D, "wcls");
    wcls = {k::TensorType::kF32, wcls_separate.data()};
  }
  layers.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    auto f32 = [](const float* p) { return DeviceMatrix{k::TensorType::kF32, p}; };
    layers[l] = {f32(wq.data() + l * Q * D),  f32(wk.data() + l * KV * D),
                 f32(wv.data() + l * KV * D), f32(wo.data() + l * D * Q),
                 f32(w1.data() + l * H * D),  f32(w2.data() + l * D * H),
                 f32(w3.data() + l * H * D)};
  }
  upload_norms(w.rms_att, w.rms_ffn, w.rms_final);
}

void CudaForwardPass::Impl::upload(const BlockWeights& w) {
  const int D = d.dim, H = d.hidden_dim, L = d.n_layers, V = d.vocab_size, Q = d.q_dim();
  for (const auto* list : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w1, &w.w2, &w.w3}) {
    if (list->size() != std::size_t(L))
      throw Error("CUDA forward pass: a weight list does not hold one matrix per layer");
  }
  // Every matrix's bytes in one allocation, each start aligned to 256 bytes; the views are
  // set once the buffer exists.
  struct Part {
    const HostBlocks* host;
    std::size_t bytes, offset;
    DeviceMatrix* view;
  };
  std::vector<Part> parts;
  std::size_t total = 0;
  auto add = [&](const HostBlocks& h, int n, int rows, DeviceMatrix& view, const char* name) {
    if (h.rows == nullptr)
      throw Error(std::string("CUDA forward pass: weight ") + name + " missing");
    if (!k::quant_cuda_supports(h.type)) {
      throw Error(std::string("CUDA forward pass: weight ") + name + " is stored as " +
                  k::ggml_type_name(std::uint32_t(h.type)) + ", which has no CUDA kernel");
    }
    const std::size_t bytes = std::size_t(rows) * k::tensor_bytes(h.type, std::size_t(n));
    parts.push_back({&h, bytes, total, &view});
    total += (bytes + 255) / 256 * 256;
  };
  layers.resize(std::size_t(L));
  add(w.token_embedding, D, V, embedding, "token_embedding");
  for (int l = 0; l < L; ++l) {
    const std::size_t i = std::size_t(l);
    LayerMatrices& m = layers[i];
    add(w.wq[i], D, Q, m.wq, "wq");
    add(w.wk[i], D, kv_dim, m.wk, "wk");
    add(w.wv[i], D, kv_dim, m.wv, "wv");
    add(w.wo[i], Q, D, m.wo, "wo");
    add(w.w1[i], D, H, m.w1, "w1");
    add(w.w2[i], H, D, m.w2, "w2");
    add(w.w3[i], D, H, m.w3, "w3");
  }
  const bool tied = w.wcls.rows == nullptr || w.wcls.rows == w.token_embedding.rows;
  if (!tied) add(w.wcls, D, V, wcls, "wcls");
  blocks = DeviceBuffer<std::uint8_t>(total);
  for (const Part& p : parts) {
    blocks.upload(p.host->rows, p.bytes, p.offset);
    *p.view = {p.host->type, blocks.data() + p.offset};
  }
  if (tied) wcls = embedding;  // the tied classifier reads the embedding's blocks
  upload_norms(w.rms_att, w.rms_ffn, w.rms_final);
}

void CudaForwardPass::Impl::reserve(int T) {
  if (T <= capacity) return;
  const std::size_t t = T, D = d.dim, H = d.hidden_dim, V = d.vocab_size;
  x = DeviceBuffer<float>(t * D);
  xb = DeviceBuffer<float>(t * D);
  q = DeviceBuffer<float>(t * std::size_t(d.q_dim()));
  k_rows = DeviceBuffer<float>(t * kv_dim);
  v_rows = DeviceBuffer<float>(t * kv_dim);
  slot = DeviceBuffer<int>(t);
  token_seq = DeviceBuffer<int>(t);
  logit_rows = DeviceBuffer<int>(t);
  att = DeviceBuffer<float>(t * std::size_t(d.q_dim()));
  out = DeviceBuffer<float>(t * D);
  hb = DeviceBuffer<float>(t * H);
  hb2 = DeviceBuffer<float>(t * H);
  logits = DeviceBuffer<float>(t * V);
  tokens = DeviceBuffer<int>(t);
  pos = DeviceBuffer<int>(t);
  // Enough for either attention, the contiguous one (one sequence) or the paged one (a batch),
  // over any step of up to T tokens: max_pos never exceeds seq_len - 1.
  attention_workspace = DeviceBuffer<float>(
      std::max(k::attention_cuda_workspace_floats(k::kAttentionBestVersion, T, d.n_heads, head_size,
                                                  d.seq_len - 1),
               k::paged_attention_cuda_workspace_floats(k::kPagedAttentionBestVersion, T, d.n_heads,
                                                        d.seq_len - 1)));
  // The widest input of a matmul is D (wq wk wv w1 w3, the classifier), Q (wo) or H (w2).
  quant_workspace = DeviceBuffer<std::uint8_t>(k::matmul_quant_cuda_workspace_bytes(
      T, std::max({d.dim, d.q_dim(), d.hidden_dim})));
  capacity = T;
}

int CudaForwardPass::Impl::run(const CudaBatchEntry* entries, int n, CudaKVPool& kv,
                               bool all_logits) {
  int T = 0, max_pos = 0;
  for (int e = 0; e < n; ++e) {
    T += entries[e].count;
    max_pos = std::max(max_pos, entries[e].start_pos + entries[e].count - 1);
  }
  const int B = kv.block_size();
  reserve(T);
  // Host-side addressing of the step: per token its id, position, pool row and sequence; per
  // sequence where its table starts; the rows whose logits are wanted.
  std::vector<int> h_tokens, h_pos, h_slot, h_seq, h_offsets, h_tables, h_rows;
  for (int e = 0; e < n; ++e) {
    const CudaBatchEntry& en = entries[e];
    h_offsets.push_back(int(h_tables.size()));
    h_tables.insert(h_tables.end(), en.block_table, en.block_table + en.num_blocks);
    for (int i = 0; i < en.count; ++i) {
      const int p = en.start_pos + i;
      h_tokens.push_back(en.tokens[i]);
      h_pos.push_back(p);
      h_slot.push_back(en.block_table[p / B] * B + p % B);
      h_seq.push_back(e);
      if (all_logits || i == en.count - 1) h_rows.push_back(int(h_tokens.size()) - 1);
    }
  }
  cudaStream_t s = stream.get();
  if (tables.size() < h_tables.size()) tables = DeviceBuffer<int>(h_tables.size());
  if (table_offsets.size() < h_offsets.size()) table_offsets = DeviceBuffer<int>(h_offsets.size());
  tokens.upload(h_tokens.data(), T, 0, s);
  pos.upload(h_pos.data(), T, 0, s);
  slot.upload(h_slot.data(), T, 0, s);
  token_seq.upload(h_seq.data(), T, 0, s);
  logit_rows.upload(h_rows.data(), h_rows.size(), 0, s);
  tables.upload(h_tables.data(), h_tables.size(), 0, s);
  table_offsets.upload(h_offsets.data(), h_offsets.size(), 0, s);

  const int D = d.dim, H = d.hidden_dim, Nh = d.n_heads, Nkv = d.n_kv_heads, hs = head_size;
  const int Q = d.q_dim();
  const std::size_t TD = std::size_t(T) * D, TKV = std::size_t(T) * kv_dim;
  // One sequence in one block is a plain contiguous cache: the flash-decoding attention
  // (attention_cuda) reads it directly. Anything else goes through the block tables.
  const bool contiguous = n == 1 && entries[0].num_blocks == 1;
  const std::size_t contiguous_offset =
      contiguous ? std::size_t(entries[0].block_table[0]) * B * kv_dim : 0;

  if (embedding.type == k::TensorType::kF32) {
    embedding_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(
        x.data(), static_cast<const float*>(embedding.data), tokens.data(), T, D, d.vocab_size);
    INFERLAB_CUDA_CHECK_LAUNCH();
  } else {
    k::dequantize_rows_cuda(x.data(), static_cast<const std::uint8_t*>(embedding.data),
                            embedding.type, tokens.data(), T, D, d.vocab_size, s);
  }

  for (int l = 0; l < d.n_layers; ++l) {
    k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), x.data(),
                    rms_att.data() + std::size_t(l) * D, T, D, d.norm_eps, s);
    const LayerMatrices& w = layers[std::size_t(l)];
    linear(q.data(), xb.data(), w.wq, T, D, Q, quant_workspace, s);
    linear(k_rows.data(), xb.data(), w.wk, T, D, kv_dim, quant_workspace, s);
    linear(v_rows.data(), xb.data(), w.wv, T, D, kv_dim, quant_workspace, s);
    if (rope_inv_freq.size() == 0) {
      k::rope_cuda(k::kRopeBestVersion, q.data(), k_rows.data(), pos.data(), T, Nh, Nkv, hs,
                   d.rope_theta, s);
    } else {
      k::rope_cuda(k::kRopeBestVersion, q.data(), k_rows.data(), pos.data(), T, Nh, Nkv, hs,
                   rope_inv_freq.data(), s);
    }
    kv_scatter_kernel<<<ceil_div(TKV, kThreads), kThreads, 0, s>>>(kv.keys(l), k_rows.data(),
                                                                   slot.data(), T, kv_dim);
    kv_scatter_kernel<<<ceil_div(TKV, kThreads), kThreads, 0, s>>>(kv.values(l), v_rows.data(),
                                                                   slot.data(), T, kv_dim);
    INFERLAB_CUDA_CHECK_LAUNCH();
    if (contiguous) {
      k::attention_cuda(k::kAttentionBestVersion, att.data(), q.data(),
                        kv.keys(l) + contiguous_offset, kv.values(l) + contiguous_offset,
                        pos.data(), T, Nh, Nkv, hs, max_pos, attention_workspace.data(),
                        attention_workspace.size(), s);
    } else {
      k::paged_attention_cuda(k::kPagedAttentionBestVersion, att.data(), q.data(), kv.keys(l),
                              kv.values(l), tables.data(), table_offsets.data(), token_seq.data(),
                              pos.data(), T, Nh, Nkv, hs, B, max_pos, attention_workspace.data(),
                              attention_workspace.size(), s);
    }
    linear(out.data(), att.data(), w.wo, T, Q, D, quant_workspace, s);
    residual_add_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(x.data(), out.data(), TD);
    INFERLAB_CUDA_CHECK_LAUNCH();

    k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), x.data(),
                    rms_ffn.data() + std::size_t(l) * D, T, D, d.norm_eps, s);
    linear(hb.data(), xb.data(), w.w1, T, D, H, quant_workspace, s);
    linear(hb2.data(), xb.data(), w.w3, T, D, H, quant_workspace, s);
    k::swiglu_cuda(k::kSwigluBestVersion, hb.data(), hb.data(), hb2.data(), long(T) * H, s);
    linear(out.data(), hb.data(), w.w2, T, H, D, quant_workspace, s);
    residual_add_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(x.data(), out.data(), TD);
    INFERLAB_CUDA_CHECK_LAUNCH();
  }

  // Only the wanted rows go through the final norm and the classifier.
  const int rows = int(h_rows.size());
  gather_rows_kernel<<<ceil_div(std::size_t(rows) * D, kThreads), kThreads, 0, s>>>(
      out.data(), x.data(), logit_rows.data(), rows, D);
  INFERLAB_CUDA_CHECK_LAUNCH();
  k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), out.data(), rms_final.data(), rows, D,
                  d.norm_eps, s);
  linear(logits.data(), xb.data(), wcls, rows, D, d.vocab_size, quant_workspace, s);
  return rows;
}

CudaForwardPass::CudaForwardPass(const ModelConfig& config, const Weights& weights)
    : impl_(std::make_unique<Impl>(config)) {
  impl_->upload(weights);
}
CudaForwardPass::CudaForwardPass(const ModelConfig& config, const BlockWeights& weights)
    : impl_(std::make_unique<Impl>(config)) {
  impl_->upload(weights);
}
CudaForwardPass::~CudaForwardPass() = default;

int CudaForwardPass::forward_batch(const CudaBatchEntry* entries, int n, CudaKVPool& pool,
                                   bool all_logits, float* host_logits) {
  const int rows = impl_->run(entries, n, pool, all_logits);
  impl_->logits.download(host_logits, std::size_t(rows) * impl_->d.vocab_size, 0,
                         impl_->stream.get());
  return rows;
}

void CudaForwardPass::forward_batch_greedy(const CudaBatchEntry* entries, int n, CudaKVPool& pool,
                                           int* next_tokens) {
  Impl& m = *impl_;
  const int rows = m.run(entries, n, pool, false);
  // Grows with the largest batch seen, then is reused: no allocation per step.
  if (m.next_token.size() < std::size_t(rows)) m.next_token = DeviceBuffer<int>(std::size_t(rows));
  for (int r = 0; r < rows; ++r) {
    k::argmax_cuda(k::kArgmaxBestVersion, m.next_token.data() + r,
                   m.logits.data() + std::size_t(r) * m.d.vocab_size, m.d.vocab_size,
                   m.stream.get());
  }
  m.next_token.download(next_tokens, std::size_t(rows), 0, m.stream.get());
}

}  // namespace inferlab::cuda
