// The transformer forward pass on the GPU, mirroring common/src/forward.cpp step for step:
// embedding; per layer rmsnorm -> q, k, v (k, v written straight into the cache rows) -> rope ->
// attention -> wo -> residual -> rmsnorm -> w1, w3 -> swiglu -> w2 -> residual; final rmsnorm on
// the rows asked for; classifier. Every op runs its best version (k<Op>BestVersion), all on one
// stream; the host waits only when a result is copied back.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.cuh"
#include "inferlab/kernels/cuda/attention_cuda.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/cuda/matmul_cuda.hpp"
#include "inferlab/kernels/cuda/rmsnorm_cuda.hpp"
#include "inferlab/kernels/cuda/rope_cuda.hpp"
#include "inferlab/kernels/cuda/sampling_cuda.hpp"
#include "inferlab/kernels/cuda/swiglu_cuda.hpp"
#include "inferlab/kernels/cuda/transformer.hpp"

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

template <class T>
DeviceBuffer<T> upload_tensor(const T* host, std::size_t count, const char* name) {
  if (!host) throw std::invalid_argument(std::string("CudaTransformer: weight ") + name + " missing");
  DeviceBuffer<T> buffer(count);
  buffer.upload(host, count);
  return buffer;
}

}  // namespace

/// @brief The device state behind CudaTransformer: weights, KV cache, activation buffers and
/// the stream. C below is `capacity`, the most tokens one forward call has needed so far.
struct CudaTransformer::Impl {
  CudaModelDesc d;  ///< dimensions only: the host weight pointers are cleared after the upload
  /// hs = D / Nh, floats per head.
  int head_size = 0, kv_dim = 0;  ///< KV = Nkv * hs, floats of one token's keys in one layer
  Stream stream;  ///< every kernel and copy is enqueued here, in order
  // Weights, shapes as in CudaModelDesc.
  /// (V, D) embedding table; also the classifier when shared
  DeviceBuffer<float> token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
      wcls_separate;  ///< (V, D) a classifier of its own; empty when shared with the embedding
  /// @var rms_att
  /// (L, D) attention RMSNorm weights
  /// @var wq
  /// (L, D, D) query projections
  /// @var wk
  /// (L, KV, D) key projections
  /// @var wv
  /// (L, KV, D) value projections
  /// @var wo
  /// (L, D, D) attention output projections
  /// @var rms_ffn
  /// (L, D) feed-forward RMSNorm weights
  /// @var w1
  /// (L, H, D) gate projections
  /// @var w2
  /// (L, D, H) down projections
  /// @var w3
  /// (L, H, D) up projections
  /// @var rms_final
  /// (D) final RMSNorm weights
  const float* wcls = nullptr;  ///< (V, D) wcls_separate, or token_embedding when shared
  /// (L, S, KV) keys; layer l, position p is row l * S + p
  DeviceBuffer<float> key_cache, value_cache;  ///< (L, S, KV) values, same layout as the keys
  int length = 0;  ///< positions held by the cache (0..S)
  // Activations for up to `capacity` tokens, each (T, width).
  int capacity = 0;  ///< C: tokens the activation buffers hold (grown by reserve())
  /// (C, D) the residual stream
  DeviceBuffer<float> x, xb, q, att, out, hb, hb2, logits, attention_workspace;
  /// @var xb
  /// (C, D) normalised input of the current block
  /// @var q
  /// (C, Nh*hs) queries
  /// @var att
  /// (C, Nh*hs) attention output
  /// @var out
  /// (C, D) output of wo or w2, added to x
  /// @var hb
  /// (C, H) w1 x, then silu(w1 x) * w3 x
  /// @var hb2
  /// (C, H) w3 x
  /// @var logits
  /// (C, V) logits of the rows asked for
  /// @var attention_workspace
  /// attention_cuda scratch for any call of up to C tokens

  /// (C) token ids of the call
  DeviceBuffer<int> tokens, pos, next_token;  ///< (1) token chosen on the device (greedy, top-p)
  /// @var pos
  /// (C) position of each token of the call

  /// @brief Validates @p desc, uploads the weights and allocates the KV cache (see the
  /// CudaTransformer constructor).
  explicit Impl(const CudaModelDesc& desc);
  /// @brief Grows the activation buffers to hold @p T tokens (no-op when capacity >= T).
  void reserve(int T);
  /// @brief Runs the layers over @p T tokens from @p host_tokens at positions start_pos..;
  /// leaves the requested rows of logits in `logits` (T rows, or the last one unless
  /// @p all_logits) and returns their count.
  int forward_device(const int* host_tokens, int T, int start_pos, bool all_logits);
};

CudaTransformer::Impl::Impl(const CudaModelDesc& desc) : d(desc) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("CudaTransformer: " + what);
  };
  if (d.dim < 1 || d.hidden_dim < 1 || d.n_layers < 1 || d.n_heads < 1 || d.n_kv_heads < 1 ||
      d.vocab_size < 1 || d.seq_len < 1)
    bad("every dimension must be >= 1");
  if (d.dim % d.n_heads != 0) bad("dim must be a multiple of n_heads");
  if (d.n_heads % d.n_kv_heads != 0) bad("n_heads must be a multiple of n_kv_heads");
  head_size = d.dim / d.n_heads;
  kv_dim = d.n_kv_heads * head_size;
  if (head_size % 2 != 0) bad("head_size must be even (RoPE rotates pairs)");
  require_cuda_device();

  const std::size_t D = d.dim, H = d.hidden_dim, L = d.n_layers, V = d.vocab_size, KV = kv_dim;
  token_embedding = upload_tensor(d.token_embedding, V * D, "token_embedding");
  rms_att = upload_tensor(d.rms_att, L * D, "rms_att");
  wq = upload_tensor(d.wq, L * D * D, "wq");
  wk = upload_tensor(d.wk, L * KV * D, "wk");
  wv = upload_tensor(d.wv, L * KV * D, "wv");
  wo = upload_tensor(d.wo, L * D * D, "wo");
  rms_ffn = upload_tensor(d.rms_ffn, L * D, "rms_ffn");
  w1 = upload_tensor(d.w1, L * H * D, "w1");
  w2 = upload_tensor(d.w2, L * D * H, "w2");
  w3 = upload_tensor(d.w3, L * H * D, "w3");
  rms_final = upload_tensor(d.rms_final, D, "rms_final");
  if (d.wcls == nullptr || d.wcls == d.token_embedding) {
    wcls = token_embedding.data();  // shared classifier: one copy on the device too
  } else {
    wcls_separate = upload_tensor(d.wcls, V * D, "wcls");
    wcls = wcls_separate.data();
  }
  // The host pointers are not kept: the caller may free its weights after construction.
  const CudaModelDesc dims_only{d.dim, d.hidden_dim, d.n_layers, d.n_heads, d.n_kv_heads,
                                d.vocab_size, d.seq_len, d.rope_theta, d.norm_eps};
  d = dims_only;

  key_cache = DeviceBuffer<float>(L * d.seq_len * KV);
  value_cache = DeviceBuffer<float>(L * d.seq_len * KV);
  key_cache.zero(stream.get());
  value_cache.zero(stream.get());
  next_token = DeviceBuffer<int>(1);
  stream.synchronize();
}

void CudaTransformer::Impl::reserve(int T) {
  if (T <= capacity) return;
  const std::size_t t = T, D = d.dim, H = d.hidden_dim, V = d.vocab_size;
  x = DeviceBuffer<float>(t * D);
  xb = DeviceBuffer<float>(t * D);
  q = DeviceBuffer<float>(t * D);
  att = DeviceBuffer<float>(t * D);
  out = DeviceBuffer<float>(t * D);
  hb = DeviceBuffer<float>(t * H);
  hb2 = DeviceBuffer<float>(t * H);
  logits = DeviceBuffer<float>(t * V);
  tokens = DeviceBuffer<int>(t);
  pos = DeviceBuffer<int>(t);
  // Enough for any call of up to T tokens: max_pos never exceeds seq_len - 1.
  attention_workspace = DeviceBuffer<float>(k::attention_cuda_workspace_floats(
      k::kAttentionBestVersion, T, d.n_heads, head_size, d.seq_len - 1));
  capacity = T;
}

int CudaTransformer::Impl::forward_device(const int* host_tokens, int T, int start_pos,
                                          bool all_logits) {
  if (T < 1) throw std::invalid_argument("CudaTransformer::forward: no tokens");
  if (!host_tokens) throw std::invalid_argument("CudaTransformer::forward: tokens is null");
  if (start_pos != length) {
    throw std::invalid_argument("CudaTransformer::forward: cache holds " + std::to_string(length) +
                                " positions but start_pos is " + std::to_string(start_pos));
  }
  if (T > d.seq_len - start_pos) {
    throw std::invalid_argument("CudaTransformer::forward: positions " +
                                std::to_string(start_pos) + ".." + std::to_string(start_pos + T - 1) +
                                " exceed the context of " + std::to_string(d.seq_len) + " tokens");
  }
  for (int t = 0; t < T; ++t) {
    if (host_tokens[t] < 0 || host_tokens[t] >= d.vocab_size) {
      throw std::invalid_argument("CudaTransformer::forward: token id " +
                                  std::to_string(host_tokens[t]) + " outside [0, " +
                                  std::to_string(d.vocab_size) + ")");
    }
  }
  reserve(T);
  cudaStream_t s = stream.get();
  std::vector<int> host_pos(T);
  for (int t = 0; t < T; ++t) host_pos[t] = start_pos + t;
  tokens.upload(host_tokens, T, 0, s);
  pos.upload(host_pos.data(), T, 0, s);

  const int D = d.dim, H = d.hidden_dim, Nh = d.n_heads, Nkv = d.n_kv_heads, hs = head_size;
  const std::size_t DD = std::size_t(D) * D, KVD = std::size_t(kv_dim) * D,
                    HD = std::size_t(H) * D, TD = std::size_t(T) * D;
  const std::size_t layer_cache = std::size_t(d.seq_len) * kv_dim;
  const int max_pos = start_pos + T - 1;

  embedding_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(
      x.data(), token_embedding.data(), tokens.data(), T, D, d.vocab_size);
  INFERLAB_CUDA_CHECK_LAUNCH();

  for (int l = 0; l < d.n_layers; ++l) {
    // --- attention block ---
    k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), x.data(), rms_att.data() + std::size_t(l) * D,
                    T, D, d.norm_eps, s);
    float* layer_keys = key_cache.data() + l * layer_cache;
    float* layer_values = value_cache.data() + l * layer_cache;
    float* k_rows = layer_keys + std::size_t(start_pos) * kv_dim;
    float* v_rows = layer_values + std::size_t(start_pos) * kv_dim;
    k::matmul_cuda(k::kMatmulBestVersion, q.data(), xb.data(), wq.data() + l * DD, T, D, D, s);
    k::matmul_cuda(k::kMatmulBestVersion, k_rows, xb.data(), wk.data() + l * KVD, T, D, kv_dim, s);
    k::matmul_cuda(k::kMatmulBestVersion, v_rows, xb.data(), wv.data() + l * KVD, T, D, kv_dim, s);
    k::rope_cuda(k::kRopeBestVersion, q.data(), k_rows, pos.data(), T, Nh, Nkv, hs, d.rope_theta,
                 s);
    k::attention_cuda(k::kAttentionBestVersion, att.data(), q.data(), layer_keys, layer_values,
                      pos.data(), T, Nh, Nkv, hs, max_pos, attention_workspace.data(),
                      attention_workspace.size(), s);
    k::matmul_cuda(k::kMatmulBestVersion, out.data(), att.data(), wo.data() + l * DD, T, D, D, s);
    residual_add_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(x.data(), out.data(), TD);
    INFERLAB_CUDA_CHECK_LAUNCH();

    // --- feed-forward block: w2( silu(w1 x) * w3 x ) ---
    k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), x.data(), rms_ffn.data() + std::size_t(l) * D,
                    T, D, d.norm_eps, s);
    k::matmul_cuda(k::kMatmulBestVersion, hb.data(), xb.data(), w1.data() + l * HD, T, D, H, s);
    k::matmul_cuda(k::kMatmulBestVersion, hb2.data(), xb.data(), w3.data() + l * HD, T, D, H, s);
    k::swiglu_cuda(k::kSwigluBestVersion, hb.data(), hb.data(), hb2.data(), long(T) * H, s);
    k::matmul_cuda(k::kMatmulBestVersion, out.data(), hb.data(), w2.data() + l * HD, T, H, D, s);
    residual_add_kernel<<<ceil_div(TD, kThreads), kThreads, 0, s>>>(x.data(), out.data(), TD);
    INFERLAB_CUDA_CHECK_LAUNCH();
  }
  length = start_pos + T;

  // Only the rows asked for go through the final norm and the (large) classifier.
  const int first = all_logits ? 0 : T - 1;
  const int rows = T - first;
  k::rmsnorm_cuda(k::kRmsnormBestVersion, xb.data(), x.data() + std::size_t(first) * D,
                  rms_final.data(), rows, D, d.norm_eps, s);
  k::matmul_cuda(k::kMatmulBestVersion, logits.data(), xb.data(), wcls, rows, D, d.vocab_size, s);
  return rows;
}

CudaTransformer::CudaTransformer(const CudaModelDesc& desc) : impl_(std::make_unique<Impl>(desc)) {}
CudaTransformer::~CudaTransformer() = default;
CudaTransformer::CudaTransformer(CudaTransformer&&) noexcept = default;
CudaTransformer& CudaTransformer::operator=(CudaTransformer&&) noexcept = default;

void CudaTransformer::forward(const int* tokens, int T, int start_pos, bool all_logits,
                              float* host_logits) {
  if (!host_logits) throw std::invalid_argument("CudaTransformer::forward: host_logits is null");
  const int rows = impl_->forward_device(tokens, T, start_pos, all_logits);
  impl_->logits.download(host_logits, std::size_t(rows) * impl_->d.vocab_size, 0,
                         impl_->stream.get());
}

int CudaTransformer::forward_greedy(const int* tokens, int T, int start_pos) {
  impl_->forward_device(tokens, T, start_pos, false);
  k::argmax_cuda(k::kArgmaxBestVersion, impl_->next_token.data(), impl_->logits.data(),
                 impl_->d.vocab_size, impl_->stream.get());
  int token = 0;
  impl_->next_token.download(&token, 1, 0, impl_->stream.get());
  return token;
}

int CudaTransformer::forward_top_p(const int* tokens, int T, int start_pos, float temperature,
                                   float top_p, float u) {
  impl_->forward_device(tokens, T, start_pos, false);
  k::top_p_sample_cuda(k::kTopPSampleBestVersion, impl_->next_token.data(), impl_->logits.data(),
                       impl_->d.vocab_size, temperature, top_p, u, impl_->stream.get());
  int token = 0;
  impl_->next_token.download(&token, 1, 0, impl_->stream.get());
  return token;
}

void CudaTransformer::reset() { impl_->length = 0; }
int CudaTransformer::length() const { return impl_->length; }
const CudaModelDesc& CudaTransformer::desc() const { return impl_->d; }

std::size_t CudaTransformer::weight_bytes() const {
  const Impl& m = *impl_;
  return m.token_embedding.bytes() + m.rms_att.bytes() + m.wq.bytes() + m.wk.bytes() +
         m.wv.bytes() + m.wo.bytes() + m.rms_ffn.bytes() + m.w1.bytes() + m.w2.bytes() +
         m.w3.bytes() + m.rms_final.bytes() + m.wcls_separate.bytes();
}

}  // namespace inferlab::cuda
