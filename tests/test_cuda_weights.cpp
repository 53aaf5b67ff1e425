// Which weight storage the CUDA forward pass runs (runtime/cuda_weights.hpp), checked on the
// host: a --weights format refused before loading, and a loaded model's first tensor without a
// CUDA kernel named with its type (a mixed file included). No GPU needed.
#include <string>

#include "inferlab/base/error.hpp"
#include "inferlab/model/gguf_writer.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/cuda_weights.hpp"
#include "small_models.hpp"
#include "test_support.hpp"

using namespace inferlab;
using Catch::Contains;
using kernels::TensorType;

namespace {

// The message require_cuda_weight_format() throws for @p format ("" when it passes).
std::string refusal(WeightFormat format) {
  try {
    require_cuda_weight_format(format);
  } catch (const ParameterError& e) {
    CHECK(e.parameter() == "weights");
    return e.problem();
  }
  return "";
}

// @p model written as GGUF with every matrix as Q8_0 except the classifier, as @p classifier
// (llama.cpp's Q8_0 and Q4_0 files often keep the classifier in another type).
void save_mixed(const Model& model, TensorType classifier, const std::string& path) {
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  GgufWriter out;
  out.add_string("general.architecture", "llama");
  out.add_u32("llama.block_count", std::uint32_t(c.n_layers));
  out.add_u32("llama.context_length", std::uint32_t(c.seq_len));
  out.add_u32("llama.embedding_length", std::uint32_t(c.dim));
  out.add_u32("llama.feed_forward_length", std::uint32_t(c.hidden_dim));
  out.add_u32("llama.attention.head_count", std::uint32_t(c.n_heads));
  out.add_u32("llama.attention.head_count_kv", std::uint32_t(c.n_kv_heads));
  out.add_f32("llama.rope.freq_base", c.rope_theta);
  out.add_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  const std::uint64_t D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  const std::uint64_t V = c.vocab_size;
  const TensorType q8 = TensorType::kQ8_0, f32 = TensorType::kF32;
  out.add_tensor("token_embd.weight", {D, V}, q8, w.token_embedding);
  for (std::uint64_t l = 0; l < std::uint64_t(c.n_layers); ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    out.add_tensor(blk + "attn_norm.weight", {D}, f32, w.rms_att + l * D);
    out.add_tensor(blk + "attn_q.weight", {D, Q}, q8, w.wq + l * Q * D);
    out.add_tensor(blk + "attn_k.weight", {D, KV}, q8, w.wk + l * KV * D);
    out.add_tensor(blk + "attn_v.weight", {D, KV}, q8, w.wv + l * KV * D);
    out.add_tensor(blk + "attn_output.weight", {Q, D}, q8, w.wo + l * D * Q);
    out.add_tensor(blk + "ffn_norm.weight", {D}, f32, w.rms_ffn + l * D);
    out.add_tensor(blk + "ffn_gate.weight", {D, H}, q8, w.w1 + l * H * D);
    out.add_tensor(blk + "ffn_down.weight", {H, D}, q8, w.w2 + l * D * H);
    out.add_tensor(blk + "ffn_up.weight", {D, H}, q8, w.w3 + l * H * D);
  }
  out.add_tensor("output_norm.weight", {D}, f32, w.rms_final);
  out.add_tensor("output.weight", {D, V}, classifier, w.wcls);
  out.write(path);
}

}  // namespace

TEST_CASE("CUDA weights: the formats the CUDA pass runs, and one line for the others",
          "[unit][cuda_weights]") {
  for (WeightFormat ok :
       {WeightFormat::file, WeightFormat::f32, WeightFormat::q8_0, WeightFormat::q4_0})
    CHECK(refusal(ok).empty());
  CHECK(refusal(WeightFormat::q4_1) ==
        "q4_1: no CUDA kernel for Q4_1 weights (the CUDA backend runs f32, q8_0 and q4_0 "
        "weights)");
  CHECK_THAT(refusal(WeightFormat::f16), Contains("f16: no CUDA kernel for F16 weights"));
  CHECK_THAT(refusal(WeightFormat::q4_k), Contains("q4_k: no CUDA kernel for Q4_K weights"));
  CHECK_THAT(refusal(WeightFormat::q6_k), Contains("q6_k: no CUDA kernel for Q6_K weights"));
  CHECK_THAT(refusal(WeightFormat::q5_0), Contains("q5_0: no CUDA kernel for Q5_0 weights"));
  CHECK_THAT(refusal(WeightFormat::q5_1), Contains("q5_1: no CUDA kernel for Q5_1 weights"));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ5_0));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ5_1));
  CHECK(cuda_runs_tensor_type(TensorType::kQ8_0));
  CHECK(cuda_runs_tensor_type(TensorType::kQ4_0));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ4_1));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kF32));  // only in a float32 model
}

TEST_CASE("CUDA weights: a loaded model's tensors are checked, the first refused one named",
          "[unit][cuda_weights]") {
  const ModelConfig c = test::small_block_config(false);
  SyntheticOptions options;
  CHECK(cuda_weights_problem(make_synthetic_model(c, options, "float")).empty());
  for (WeightFormat ok : {WeightFormat::q8_0, WeightFormat::q4_0}) {
    options.weights = ok;
    CHECK(cuda_weights_problem(make_synthetic_model(c, options, "blocks")).empty());
  }
  options.weights = WeightFormat::q4_1;
  CHECK(cuda_weights_problem(make_synthetic_model(c, options, "q4_1")) ==
        "tensor 'token_embedding' is stored as Q4_1: no CUDA kernel for it (the CUDA backend "
        "runs f32, q8_0 and q4_0 weights)");

  // A file whose matrices are Q8_0 but its classifier Q4_1: refused by the classifier's name,
  // never run with something else in its place; the same file with a Q8_0 classifier runs.
  const Model original = make_synthetic_model(c, {}, "mixed");
  const test::TempFile file("cuda_mixed", ".gguf");
  save_mixed(original, TensorType::kQ4_1, file.str());
  CHECK_THAT(cuda_weights_problem(Model::load(file.str())),
             Contains("tensor 'wcls' is stored as Q4_1: no CUDA kernel for it"));
  save_mixed(original, TensorType::kQ8_0, file.str());
  CHECK(cuda_weights_problem(Model::load(file.str())).empty());
  // A float32 matrix among blocks has no row-major copy to upload: named too.
  save_mixed(original, TensorType::kF32, file.str());
  CHECK_THAT(cuda_weights_problem(Model::load(file.str())),
             Contains("tensor 'wcls' is stored as F32: the CUDA pass runs F32 tensors in a "
                      "float32 model only"));
}
