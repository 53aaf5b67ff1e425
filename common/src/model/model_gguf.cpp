// Loading a Llama-architecture model from a GGUF file, and writing one.
//
// The forward passes read every weight as float32 in llama2.c's layout (each tensor kind of
// all layers back to back, see Weights), so the loader converts each GGUF tensor to float32
// into that layout. GGUF lists a matrix's dimensions fastest first: a linear layer's
// `[in, out]` is the row-major (out, in) matrix the passes use, with no transposition. Q and K
// need no un-permuting either: llama.cpp's converter already orders them for the adjacent-pair
// RoPE llama2.c (and InferLab) apply.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/gguf_writer.hpp"
#include "inferlab/model/model.hpp"
#include "legacy_rope_tables.hpp"
#include "model_storage.hpp"

namespace inferlab {

namespace {

// The architectures whose tensors and hyper-parameters the loader maps onto the Llama forward
// pass (Llama 2 and 3, SmolLM2, TinyLlama and Mistral without sliding window all say `llama`).
constexpr const char* kSupportedArchitectures = "llama";

// A required positive integer key that fits an int.
int positive_int(const GgufFile& f, const std::string& key) {
  const std::uint32_t v = f.get_u32(key);
  if (v == 0 || v > std::uint32_t(std::numeric_limits<int>::max())) {
    throw Error(fmt::format("cannot load model '{}': {} = {} (must be in [1, {}])", f.path(), key,
                            v, std::numeric_limits<int>::max()));
  }
  return int(v);
}

ModelConfig config_from_metadata(const GgufFile& f) {
  const std::string path = f.path();
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "llama") {
    throw Error(
        fmt::format("cannot load model '{}': architecture '{}' is not supported "
                    "(supported: {})",
                    path, arch, kSupportedArchitectures));
  }
  const std::string p = arch + ".";
  ModelConfig c;
  c.dim = positive_int(f, p + "embedding_length");
  c.hidden_dim = positive_int(f, p + "feed_forward_length");
  c.n_layers = positive_int(f, p + "block_count");
  c.n_heads = positive_int(f, p + "attention.head_count");
  c.n_kv_heads = f.find(p + "attention.head_count_kv")
                     ? positive_int(f, p + "attention.head_count_kv")
                     : c.n_heads;
  c.seq_len = positive_int(f, p + "context_length");
  if (f.find(p + "rope.freq_base")) c.rope_theta = f.get_f32(p + "rope.freq_base");
  if (f.find(p + "attention.layer_norm_rms_epsilon"))
    c.norm_eps = f.get_f32(p + "attention.layer_norm_rms_epsilon");
  const GgufTensor* embedding = f.find_tensor("token_embd.weight");
  if (!embedding)
    throw Error(fmt::format("cannot load model '{}': tensor 'token_embd.weight' is missing", path));
  if (embedding->n_dims != 2 || embedding->ne[1] > std::uint64_t(std::numeric_limits<int>::max())) {
    throw Error(
        fmt::format("cannot load model '{}': tensor 'token_embd.weight' is {}, expected "
                    "[embedding_length, vocabulary]",
                    path, embedding->describe()));
  }
  c.vocab_size = int(embedding->ne[1]);
  if (f.find(p + "vocab_size") && f.get_u32(p + "vocab_size") != std::uint32_t(c.vocab_size)) {
    throw Error(
        fmt::format("cannot load model '{}': {}vocab_size = {} but token_embd.weight has "
                    "{} rows",
                    path, p, f.get_u32(p + "vocab_size"), c.vocab_size));
  }
  c.shared_classifier = f.find_tensor("output.weight") == nullptr;
  if (f.find(p + "rope.scaling.type")) {
    const std::string type(f.get_string(p + "rope.scaling.type"));
    if (type == "linear") {
      c.rope_scaling = RopeScaling::linear;
    } else if (type == "llama3") {
      c.rope_scaling = RopeScaling::llama3;
      c.rope_low_freq_factor = f.get_f32(p + "rope.scaling.low_freq_factor");
      c.rope_high_freq_factor = f.get_f32(p + "rope.scaling.high_freq_factor");
      c.rope_original_context = positive_int(f, p + "rope.scaling.original_context_length");
    } else if (type != "none") {
      throw Error(
          fmt::format("cannot load model '{}': {}rope.scaling.type '{}' is not supported "
                      "(none, linear, llama3)",
                      path, p, type));
    }
    if (c.rope_scaling != RopeScaling::none) c.rope_factor = f.get_f32(p + "rope.scaling.factor");
  }
  // The head width: key_length when the file gives it, which may differ from D / Nh (the
  // query and output projections are then Nh * hs wide, not D). Values as wide as keys are the
  // only layout the passes implement.
  if (f.find(p + "attention.key_length"))
    c.head_dim = positive_int(f, p + "attention.key_length");
  if (f.find(p + "attention.value_length") &&
      f.get_u32(p + "attention.value_length") != std::uint32_t(c.head_size())) {
    throw Error(
        fmt::format("cannot load model '{}': {}attention.value_length = {} differs from the "
                    "key width {} (not supported)",
                    path, p, f.get_u32(p + "attention.value_length"), c.head_size()));
  }
  // Llama 3.1's files carry their RoPE frequency rule as one divisor per frequency.
  if (const GgufTensor* t = f.find_tensor("rope_freqs.weight")) {
    const std::size_t pairs = std::size_t(c.head_size() / 2);
    if (t->n_dims != 1 || t->ne[0] != pairs) {
      throw Error(fmt::format(
          "cannot load model '{}': tensor 'rope_freqs.weight' is {}, but the head size {} "
          "implies [{}]",
          path, t->describe(), c.head_size(), pairs));
    }
    c.rope_freq_factors.resize(pairs);
    kernels::dequantize_ref(t->type, t->data, c.rope_freq_factors.data(), pairs);
  }
  c.validate(path);
  return c;
}

// What converting one tensor type to float32 cost, for the load note.
struct Conversion {
  int tensors = 0;
  std::size_t file_bytes = 0, float_bytes = 0;
};

}  // namespace

Model Model::load_gguf(const std::string& path, const LoadOptions& options) {
  const GgufFile f = GgufFile::open(path);
  const ModelConfig c = config_from_metadata(f);
  const std::size_t D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), V = c.vocab_size;

  // Nine tensors per block: a block count the file's tensors cannot hold is refused before the
  // list below is built from it.
  constexpr std::size_t kPerBlock = 9;
  if (std::size_t(c.n_layers) > f.tensors().size() / kPerBlock) {
    throw Error(fmt::format(
        "cannot load model '{}': llama.block_count {} needs {} tensors but the file holds {}",
        path, c.n_layers, std::size_t(c.n_layers) * kPerBlock, f.tensors().size()));
  }
  // Every tensor the model needs, with the dimensions {in, out} the metadata implies (fastest
  // first; out = 1 for a vector), and where it goes in the llama2.c layout.
  struct Part {
    std::string name;
    std::size_t in, out;
    const float* Weights::*field;
    std::size_t offset;  // floats into that field
  };
  std::vector<Part> needed = {{"token_embd.weight", D, V, &Weights::token_embedding, 0}};
  for (std::size_t l = 0; l < std::size_t(c.n_layers); ++l) {
    const std::string blk = fmt::format("blk.{}.", l);
    needed.push_back({blk + "attn_norm.weight", D, 1, &Weights::rms_att, l * D});
    needed.push_back({blk + "attn_q.weight", D, Q, &Weights::wq, l * Q * D});
    needed.push_back({blk + "attn_k.weight", D, KV, &Weights::wk, l * KV * D});
    needed.push_back({blk + "attn_v.weight", D, KV, &Weights::wv, l * KV * D});
    needed.push_back({blk + "attn_output.weight", Q, D, &Weights::wo, l * D * Q});
    needed.push_back({blk + "ffn_norm.weight", D, 1, &Weights::rms_ffn, l * D});
    needed.push_back({blk + "ffn_gate.weight", D, H, &Weights::w1, l * H * D});
    needed.push_back({blk + "ffn_down.weight", H, D, &Weights::w2, l * D * H});
    needed.push_back({blk + "ffn_up.weight", D, H, &Weights::w3, l * H * D});
  }
  needed.push_back({"output_norm.weight", D, 1, &Weights::rms_final, 0});
  if (!c.shared_classifier) needed.push_back({"output.weight", D, V, &Weights::wcls, 0});

  // Every tensor is checked before the float body is allocated: the metadata's sizes are only
  // believed once the file's tensors, which must lie inside the file, agree with them.
  std::vector<const GgufTensor*> tensors;
  for (const Part& part : needed) {
    const GgufTensor* t = f.find_tensor(part.name);
    if (!t) {
      throw Error(
          fmt::format("cannot load model '{}': tensor '{}' is missing", path, part.name));
    }
    const bool vector = part.out == 1;
    if ((vector ? t->n_dims != 1 : t->n_dims != 2) || t->ne[0] != part.in ||
        t->ne[1] != part.out) {
      throw Error(fmt::format(
          "cannot load model '{}': tensor '{}' is {}, but the metadata implies [{}]", path,
          part.name, t->describe(),
          vector ? fmt::format("{}", part.in) : fmt::format("{}, {}", part.in, part.out)));
    }
    tensors.push_back(t);
  }

  // The llama2.c layout also holds RoPE tables of context_length x head size floats, which no
  // tensor bounds: a context whose tables outweigh the weights themselves is refused rather
  // than allocated.
  std::size_t weight_elements = 0;
  for (const GgufTensor* t : tensors) weight_elements += t->n_elements;
  const std::size_t table_elements = std::size_t(c.seq_len) * std::size_t(c.head_size());
  if (table_elements > weight_elements) {
    throw Error(fmt::format(
        "cannot load model '{}': llama.context_length {} x head size {} = {} RoPE table "
        "entries, more than the model's {} weights (the metadata does not fit the tensors)",
        path, c.seq_len, c.head_size(), table_elements, weight_elements));
  }
  // The type each matrix is kept as: the file's (WeightFormat::file), or the format's. When
  // every one is float32 the model is a float model in llama2.c's layout, as below; otherwise
  // the matrices are stored (model_storage.cpp) and only the norms are converted to floats.
  const std::optional<kernels::TensorType> format_type = weight_format_type(options.weights);
  bool all_float = true;
  for (std::size_t i = 0; i < needed.size(); ++i) {
    if (needed[i].out == 1) continue;
    all_float &= format_type.value_or(tensors[i]->type) == kernels::TensorType::kF32;
  }
  if (!all_float) {
    Model m;
    m.config_ = c;
    m.name_ = path;
    m.storage_ = std::make_unique<Storage>();
    const std::size_t L = std::size_t(c.n_layers);
    std::vector<float> norms(2 * L * D + D);  // rms_att, rms_ffn, rms_final
    std::vector<StoredTensor> stored;
    for (std::size_t i = 0; i < needed.size(); ++i) {
      const Part& part = needed[i];
      const GgufTensor& t = *tensors[i];
      if (part.out != 1) {
        stored.push_back({part.name, t.type, t.data, int(part.in), int(part.out),
                          format_type.value_or(t.type), part.field,
                          int(part.offset / (part.in * part.out))});
        continue;
      }
      const std::size_t base = part.field == &Weights::rms_att   ? 0
                               : part.field == &Weights::rms_ffn ? L * D
                                                                 : 2 * L * D;
      float* const dst = norms.data() + base + part.offset;
      kernels::dequantize_ref(t.type, t.data, dst, t.n_elements);
      for (std::size_t j = 0; j < t.n_elements; ++j) {
        if (!std::isfinite(dst[j])) {
          throw Error(
              fmt::format("cannot load model '{}': tensor '{}' holds {} at index {}: the "
                          "weights must be finite",
                          path, part.name, dst[j], j));
        }
      }
    }
    m.store(stored, std::move(norms), options.weights,
            fmt::format("GGUF v{} '{}', {} classifier, file {:.1f} MB", f.version(),
                        f.find("general.name") ? std::string(f.get_string("general.name"))
                                               : "llama",
                        c.shared_classifier ? "tied" : "separate", double(f.file_bytes()) / 1e6));
    return m;
  }
  Model m = from_buffer(c, std::vector<float>(body_floats(c)), path);
  float* const body = m.owned_body();
  std::map<std::string, Conversion> conversions;
  for (std::size_t i = 0; i < needed.size(); ++i) {
    const GgufTensor& t = *tensors[i];
    // The Weights pointers point into the owned body, which the loader may write.
    float* const dst = body + ((m.weights_.*needed[i].field) - body) + needed[i].offset;
    kernels::dequantize_ref(t.type, t.data, dst, t.n_elements);
    for (std::size_t j = 0; j < t.n_elements; ++j) {
      if (!std::isfinite(dst[j])) {
        throw Error(
            fmt::format("cannot load model '{}': tensor '{}' holds {} at index {}: the "
                        "weights must be finite",
                        path, needed[i].name, dst[j], j));
      }
    }
    Conversion& k = conversions[kernels::ggml_type_name(std::uint32_t(t.type))];
    ++k.tensors;
    k.file_bytes += t.n_bytes;
    k.float_bytes += t.n_elements * sizeof(float);
  }
  fill_legacy_rope_tables(c, body + (m.weights_.rms_final - body) + D);

  auto mb = [](std::size_t bytes) { return fmt::format("{:.1f} MB", double(bytes) / 1e6); };
  std::string parts;
  std::size_t total_float = 0;
  for (const auto& [type, k] : conversions) {
    parts += fmt::format("{}{} {} tensor{} ({} -> {})", parts.empty() ? "" : ", ", k.tensors, type,
                         k.tensors == 1 ? "" : "s", mb(k.file_bytes), mb(k.float_bytes));
    total_float += k.float_bytes;
  }
  m.load_note_ = fmt::format(
      "GGUF v{} '{}', {} classifier; converted to float32 at load: {}; weights in memory {} "
      "(file {})",
      f.version(), f.find("general.name") ? std::string(f.get_string("general.name")) : "llama",
      c.shared_classifier ? "tied" : "separate", parts, mb(total_float), mb(f.file_bytes()));
  return m;
}

void Model::save_gguf(const std::string& path, kernels::TensorType type,
                      std::optional<kernels::TensorType> classifier) const {
  if (!storage_) throw Error(fmt::format("cannot save '{}': it is a view of another model", name_));
  if (!float_weights()) {
    throw Error(fmt::format("cannot save '{}' as GGUF: its weights are stored in a block "
                            "format, not as float32",
                            name_));
  }
  const ModelConfig& c = config_;
  GgufWriter out;
  out.add_string("general.architecture", "llama");
  out.add_string("general.name", name_);
  out.add_u32("llama.block_count", std::uint32_t(c.n_layers));
  out.add_u32("llama.context_length", std::uint32_t(c.seq_len));
  out.add_u32("llama.embedding_length", std::uint32_t(c.dim));
  out.add_u32("llama.feed_forward_length", std::uint32_t(c.hidden_dim));
  out.add_u32("llama.attention.head_count", std::uint32_t(c.n_heads));
  out.add_u32("llama.attention.head_count_kv", std::uint32_t(c.n_kv_heads));
  out.add_u32("llama.attention.key_length", std::uint32_t(c.head_size()));
  out.add_f32("llama.rope.freq_base", c.rope_theta);
  out.add_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  out.add_u32("llama.vocab_size", std::uint32_t(c.vocab_size));
  if (c.rope_scaling != RopeScaling::none) {
    out.add_string("llama.rope.scaling.type",
                   c.rope_scaling == RopeScaling::linear ? "linear" : "llama3");
    out.add_f32("llama.rope.scaling.factor", c.rope_factor);
  }
  if (c.rope_scaling == RopeScaling::llama3) {
    out.add_f32("llama.rope.scaling.low_freq_factor", c.rope_low_freq_factor);
    out.add_f32("llama.rope.scaling.high_freq_factor", c.rope_high_freq_factor);
    out.add_u32("llama.rope.scaling.original_context_length",
                std::uint32_t(c.rope_original_context));
  }
  const std::uint64_t D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  const std::uint64_t V = c.vocab_size;
  const Weights& w = weights_;
  using kernels::TensorType;
  out.add_tensor("token_embd.weight", {D, V}, type, w.token_embedding);
  for (std::uint64_t l = 0; l < std::uint64_t(c.n_layers); ++l) {
    const std::string blk = fmt::format("blk.{}.", l);
    out.add_tensor(blk + "attn_norm.weight", {D}, TensorType::kF32, w.rms_att + l * D);
    out.add_tensor(blk + "attn_q.weight", {D, Q}, type, w.wq + l * Q * D);
    out.add_tensor(blk + "attn_k.weight", {D, KV}, type, w.wk + l * KV * D);
    out.add_tensor(blk + "attn_v.weight", {D, KV}, type, w.wv + l * KV * D);
    out.add_tensor(blk + "attn_output.weight", {Q, D}, type, w.wo + l * D * Q);
    out.add_tensor(blk + "ffn_norm.weight", {D}, TensorType::kF32, w.rms_ffn + l * D);
    out.add_tensor(blk + "ffn_gate.weight", {D, H}, type, w.w1 + l * H * D);
    out.add_tensor(blk + "ffn_down.weight", {H, D}, type, w.w2 + l * D * H);
    out.add_tensor(blk + "ffn_up.weight", {D, H}, type, w.w3 + l * H * D);
  }
  out.add_tensor("output_norm.weight", {D}, TensorType::kF32, w.rms_final);
  if (!c.shared_classifier)
    out.add_tensor("output.weight", {D, V}, classifier.value_or(type), w.wcls);
  if (!c.rope_freq_factors.empty()) {
    out.add_tensor("rope_freqs.weight", {c.rope_freq_factors.size()}, TensorType::kF32,
                   c.rope_freq_factors.data());
  }
  out.write(path);
}

}  // namespace inferlab
