// Weights kept in a block format: a model's linear layers and embedding table stored as
// kernels::QuantMatrix rows (quantized from floats, or a file's blocks copied once), the
// norms as float32, and no float copy of anything else.
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "model_storage.hpp"

namespace inferlab {

namespace k = kernels;

namespace {

// Throws if any of the n floats at p is not finite, naming the tensor, the index and, for a
// block format, the block (a NaN or infinite scale turns its whole block non-finite).
void require_finite(const float* p, std::size_t n, const std::string& model,
                    const std::string& tensor, k::TensorType type) {
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) finite &= std::isfinite(p[i]);
  if (finite) return;
  std::size_t i = 0;
  while (std::isfinite(p[i])) ++i;
  const std::size_t block = k::block_elements(type);
  const std::string where =
      block > 1 ? fmt::format(" ({} block {}: its scale or minimum is not finite)",
                              k::ggml_type_name(std::uint32_t(type)), i / block)
                : "";
  throw Error(fmt::format("cannot load model '{}': tensor '{}' holds {} at index {}{}: the "
                          "weights must be finite",
                          model, tensor, p[i], i, where));
}

// What the weights of one role (linear layers, embedding, classifier) are stored as.
struct Stored {
  int tensors = 0;
  std::size_t weights = 0, bytes = 0;
};

}  // namespace

bool Model::float_weights() const { return packed_->embedding.empty(); }

double Model::bytes_read_per_token() const {
  const ModelConfig& c = config_;
  const CpuLinears& l = cpu_linears();  // a float model's packed matrices: what a step reads
  // This model's own layers: a first_layers_view() shares its base's longer lists.
  double bytes = double(l.wcls.bytes());
  for (const auto* list : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3})
    for (int layer = 0; layer < c.n_layers; ++layer)
      bytes += double((*list)[std::size_t(layer)].bytes());
  const double norms = (2.0 * c.n_layers + 1.0) * c.dim * sizeof(float);
  const double row = float_weights() ? double(c.dim) * sizeof(float)
                                     : double(packed_->embedding.bytes()) / c.vocab_size;
  return bytes + norms + row;
}

void Model::embedding_row(int token, float* row) const {
  const std::size_t D = std::size_t(config_.dim);
  if (float_weights()) {
    std::memcpy(row, weights_.token_embedding + std::size_t(token) * D, D * sizeof(float));
  } else {
    packed_->embedding.dequantize_row(token, row);
  }
}

const k::QuantMatrix& Model::stored_embedding() const { return packed_->embedding; }

void Model::store(const std::vector<StoredTensor>& tensors, std::vector<float> norms,
                  WeightFormat format, const std::string& source) {
  const ModelConfig& c = config_;
  make_packed();  // a fresh one: views of the float model keep theirs
  Packed& p = *packed_;
  CpuLinears& out = p.linears;
  for (auto* list : {&out.wq, &out.wk, &out.wv, &out.wo, &out.w1, &out.w2, &out.w3})
    list->resize(std::size_t(c.n_layers));
  // Every target checked before any conversion: a refusal costs nothing.
  for (const StoredTensor& t : tensors) {
    const auto ggml = std::uint32_t(t.target);
    if (!k::is_supported_tensor_type(ggml)) {
      throw ParameterError("weights", fmt::format("{}: this build cannot store {} tensors (it "
                                                  "stores {})",
                                                  weight_format_name(format),
                                                  k::ggml_type_name(ggml),
                                                  k::supported_tensor_types()));
    }
    const std::size_t block = k::block_elements(t.target);
    if (std::size_t(t.n) % block != 0) {
      throw ParameterError(
          "weights", fmt::format("{}: tensor '{}' has rows of {} numbers, not a whole number of "
                                 "{}'s {}-number blocks",
                                 weight_format_name(format), t.name, t.n,
                                 k::ggml_type_name(ggml), block));
    }
  }
  std::map<std::string, Stored> linears, embedding, classifier;
  std::vector<float> scratch;
  bool converted = false;
  for (const StoredTensor& t : tensors) {
    const std::size_t count = std::size_t(t.n) * std::size_t(t.d);
    // The source as floats, checked finite (a block's non-finite scale shows up here).
    const float* floats = static_cast<const float*>(t.data);
    if (t.type != k::TensorType::kF32) {
      scratch.resize(count);
      k::dequantize_ref(t.type, t.data, scratch.data(), count);
      floats = scratch.data();
    }
    require_finite(floats, count, name_, t.name, t.type);
    converted |= t.type != t.target;
    // The file's blocks are kept as they are; anything else is quantized from the floats.
    auto stored = [&] {
      return t.type == t.target ? k::QuantMatrix::copy_rows(t.target, t.data, t.n, t.d)
                                : k::QuantMatrix::quantize(t.target, floats, t.n, t.d);
    };
    LinearWeight w;
    if (t.field == &Weights::token_embedding) {
      p.embedding = stored();
    } else if (t.target == k::TensorType::kF32) {
      w.packed = k::PackedMatrix(floats, t.n, t.d);
    } else {
      w.stored = stored();
    }
    const std::string type = k::ggml_type_name(std::uint32_t(t.target));
    Stored& s = (t.field == &Weights::token_embedding ? embedding
                 : t.field == &Weights::wcls          ? classifier
                                                      : linears)[type];
    ++s.tensors;
    s.weights += count;
    s.bytes += t.field == &Weights::token_embedding ? p.embedding.bytes() : w.bytes();
    if (t.field == &Weights::wcls) {
      out.wcls = std::move(w);
    } else if (t.field != &Weights::token_embedding) {
      const std::pair<const float* Weights::*, std::vector<LinearWeight> CpuLinears::*> slots[] = {
          {&Weights::wq, &CpuLinears::wq}, {&Weights::wk, &CpuLinears::wk},
          {&Weights::wv, &CpuLinears::wv}, {&Weights::wo, &CpuLinears::wo},
          {&Weights::w1, &CpuLinears::w1}, {&Weights::w2, &CpuLinears::w2},
          {&Weights::w3, &CpuLinears::w3}};
      for (const auto& [field, list] : slots)
        if (t.field == field) (out.*list)[std::size_t(t.layer)] = std::move(w);
    }
  }
  if (c.shared_classifier) {
    // The tied classifier reads the embedding table's own bytes (float32 tables are packed).
    if (p.embedding.type() == k::TensorType::kF32) {
      out.wcls.packed = k::PackedMatrix(reinterpret_cast<const float*>(p.embedding.row(0)),
                                        c.dim, c.vocab_size);
    } else {
      out.wcls.stored = p.embedding;
    }
  }
  // The norms are the only float tensors kept; the float body (or mapping) goes.
  storage_->norms = std::move(norms);
  storage_->map.reset();
  std::vector<float>().swap(storage_->owned);  // its memory given back, not only cleared
  const std::size_t L = std::size_t(c.n_layers), D = std::size_t(c.dim);
  weights_ = Weights{};
  weights_.rms_att = storage_->norms.data();
  weights_.rms_ffn = weights_.rms_att + L * D;
  weights_.rms_final = weights_.rms_ffn + L * D;
  p.weights = weights_;
  p.file_backed = false;
  std::call_once(p.once, [] {});  // built: cpu_linears() has nothing left to pack

  // "210 Q4_1 tensors (0.625 bytes/weight: linear layers), ...": each type of each role.
  std::string parts;
  auto describe = [&parts](const std::map<std::string, Stored>& role, const char* what) {
    for (const auto& [type, s] : role) {
      parts += fmt::format("{}{} {} tensor{} ({:.4g} bytes/weight: {})", parts.empty() ? "" : ", ",
                           s.tensors, type, s.tensors == 1 ? "" : "s",
                           double(s.bytes) / double(s.weights), what);
    }
  };
  describe(linears, "linear layers");
  describe(classifier, "classifier");
  describe(embedding, c.shared_classifier
                          ? "embedding, rows dequantized on lookup, also the tied classifier"
                          : "embedding, rows dequantized on lookup");
  describe({{"F32", Stored{2 * c.n_layers + 1, storage_->norms.size(),
                           storage_->norms.size() * sizeof(float)}}},
           "norms");
  std::size_t total = p.embedding.bytes() + storage_->norms.size() * sizeof(float);
  for (const auto* role : {&linears, &classifier})
    for (const auto& entry : *role) total += entry.second.bytes;
  load_note_ = fmt::format("{}; weights {} ({}): {}; weights in memory {:.1f} MB", source,
                           converted ? "converted at load" : "kept as the file stores them",
                           weight_format_name(format), parts, double(total) / 1e6);
}

Model Model::with_weights(Model model, WeightFormat format) {
  const std::optional<k::TensorType> target = weight_format_type(format);
  if (!target || *target == k::TensorType::kF32) return model;
  if (!model.storage_) {
    throw Error(fmt::format("cannot store '{}' as {}: it is a view of another model",
                            model.name_, weight_format_name(format)));
  }
  if (!model.float_weights()) {
    throw Error(fmt::format("cannot store '{}' as {}: its weights are already stored in a "
                            "block format",
                            model.name_, weight_format_name(format)));
  }
  const ModelConfig& c = model.config_;
  const Weights& w = model.weights_;
  const int L = c.n_layers, D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  const int V = c.vocab_size;
  std::vector<StoredTensor> tensors;
  auto add = [&](const char* name, const float* Weights::*field, int layer, int n, int d) {
    const std::size_t index = layer < 0 ? 0 : std::size_t(layer);
    const float* data = w.*field + index * std::size_t(n) * std::size_t(d);
    tensors.push_back({layer < 0 ? name : fmt::format("{} (layer {})", name, layer),
                       k::TensorType::kF32, data, n, d, *target, field, layer});
  };
  add("token_embedding", &Weights::token_embedding, -1, D, V);
  for (int l = 0; l < L; ++l) {
    add("wq", &Weights::wq, l, D, Q);
    add("wk", &Weights::wk, l, D, KV);
    add("wv", &Weights::wv, l, D, KV);
    add("wo", &Weights::wo, l, Q, D);
    add("w1", &Weights::w1, l, D, H);
    add("w2", &Weights::w2, l, H, D);
    add("w3", &Weights::w3, l, D, H);
  }
  if (!c.shared_classifier) add("wcls", &Weights::wcls, -1, D, V);
  std::vector<float> norms(w.rms_att, w.rms_att + std::size_t(L) * D);
  norms.insert(norms.end(), w.rms_ffn, w.rms_ffn + std::size_t(L) * D);
  norms.insert(norms.end(), w.rms_final, w.rms_final + D);
  const std::string source = model.storage_->map ? "llama2.c float32 file" : "float32 weights";
  model.store(tensors, std::move(norms), format, source);
  return model;
}

}  // namespace inferlab
