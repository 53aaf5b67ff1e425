// Bridge from the core's Model to the CUDA backend's description of it.
#include "inferlab/runtime/cuda_model.hpp"

#ifdef INFERLAB_HAVE_CUDA
namespace inferlab {

cuda::CudaModelDesc cuda_model_desc(const Model& model) {
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  cuda::CudaModelDesc d;
  d.dim = c.dim;
  d.hidden_dim = c.hidden_dim;
  d.n_layers = c.n_layers;
  d.n_heads = c.n_heads;
  d.n_kv_heads = c.n_kv_heads;
  d.vocab_size = c.vocab_size;
  d.seq_len = c.seq_len;
  d.rope_theta = c.rope_theta;
  d.norm_eps = c.norm_eps;
  d.token_embedding = w.token_embedding;
  d.rms_att = w.rms_att;
  d.wq = w.wq;
  d.wk = w.wk;
  d.wv = w.wv;
  d.wo = w.wo;
  d.rms_ffn = w.rms_ffn;
  d.w1 = w.w1;
  d.w2 = w.w2;
  d.w3 = w.w3;
  d.rms_final = w.rms_final;
  d.wcls = w.wcls;
  return d;
}

}  // namespace inferlab
#endif
