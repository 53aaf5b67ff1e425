// Loading and validating llama2.c legacy checkpoints (GGUF files: model_gguf.cpp).
#include "inferlab/model/model.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <string_view>
#include <algorithm>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <numbers>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/model/gguf.hpp"
#include "mapped_file.hpp"
#include "model_storage.hpp"

namespace inferlab {

namespace {

constexpr std::size_t kHeaderBytes = 7 * sizeof(std::int32_t);

// Number of floats each tensor of the file body holds, in export order. The two RoPE tables
// (freq_cis_real/imag, each S * hs/2) are a relic of early llama2.c exports: the file carries
// them, the forward pass recomputes the rotation instead.
struct BodyLayout {
  std::size_t embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis, wcls;
  std::size_t total() const {
    return embedding + rms_att + wq + wk + wv + wo + rms_ffn + w1 + w2 + w3 + rms_final + freq_cis +
           wcls;
  }
};

BodyLayout layout_of(const ModelConfig& c) {
  const std::size_t L = c.n_layers, D = c.dim, H = c.hidden_dim, V = c.vocab_size;
  const std::size_t Q = c.q_dim(), KV = c.kv_dim(), S = c.seq_len, hs = c.head_size();
  BodyLayout b{};
  b.embedding = V * D;
  b.rms_att = L * D;
  b.wq = L * Q * D;
  b.wk = L * KV * D;
  b.wv = L * KV * D;
  b.wo = L * D * Q;
  b.rms_ffn = L * D;
  b.w1 = L * H * D;
  b.w2 = L * D * H;
  b.w3 = L * H * D;
  b.rms_final = D;
  b.freq_cis = S * hs;  // real and imaginary halves, S * hs/2 each
  b.wcls = c.shared_classifier ? 0 : V * D;
  return b;
}

// One pass over the weights: a single NaN or infinity would turn every later activation into
// NaN (or, with greedy sampling, into confident garbage), far from its cause. The RoPE tables
// are skipped: the forward pass never reads them.
void check_finite_weights(const float* body, const ModelConfig& c, const std::string& path) {
  const BodyLayout b = layout_of(c);
  struct Tensor {
    const char* name;
    std::size_t floats;
    bool per_layer;
  };
  const Tensor tensors[] = {{"token_embedding", b.embedding, false},
                            {"rms_att", b.rms_att, true},
                            {"wq", b.wq, true},
                            {"wk", b.wk, true},
                            {"wv", b.wv, true},
                            {"wo", b.wo, true},
                            {"rms_ffn", b.rms_ffn, true},
                            {"w1", b.w1, true},
                            {"w2", b.w2, true},
                            {"w3", b.w3, true},
                            {"rms_final", b.rms_final, false},
                            {"freq_cis", b.freq_cis, false},
                            {"wcls", b.wcls, false}};
  std::size_t offset = 0;
  for (const Tensor& t : tensors) {
    const float* p = body + offset;
    offset += t.floats;
    if (std::string_view(t.name) == "freq_cis") continue;
    constexpr std::size_t kChunk = 4096;
    for (std::size_t start = 0; start < t.floats; start += kChunk) {
      const std::size_t end = std::min(t.floats, start + kChunk);
      // Branch-free over a chunk (vectorizes); the exact index is found only on failure.
      bool finite = true;
      for (std::size_t i = start; i < end; ++i) finite &= std::isfinite(p[i]);
      if (finite) continue;
      std::size_t i = start;
      while (std::isfinite(p[i])) ++i;
      const std::string where =
          t.per_layer ? fmt::format(" (layer {})", i / (t.floats / std::size_t(c.n_layers))) : "";
      throw Error(fmt::format(
          "cannot load model '{}': tensor {} holds {} at index {}{}, byte "
          "offset {}: the weights must be finite",
          path, t.name, p[i], i, where, kHeaderBytes + (offset - t.floats + i) * sizeof(float)));
    }
  }
}

}  // namespace

std::size_t ModelConfig::n_params() const {
  BodyLayout b = layout_of(*this);
  return b.total() - b.freq_cis;
}

std::size_t ModelConfig::bytes_read_per_token() const {
  BodyLayout b = layout_of(*this);
  // Every matrix of every layer, the final norm, the classifier (the embedding table when
  // shared) and one embedding row.
  std::size_t floats = b.rms_att + b.wq + b.wk + b.wv + b.wo + b.rms_ffn + b.w1 + b.w2 + b.w3 +
                       b.rms_final + std::size_t(vocab_size) * dim + dim;
  return floats * sizeof(float);
}

std::vector<float> ModelConfig::rope_inv_freq() const {
  const int hs = head_size();
  std::vector<float> inv_freq(std::size_t(hs / 2));
  // Llama 3.1's rule (the one its reference code and llama.cpp apply): a wavelength longer
  // than original/low_freq_factor is stretched by the factor, one shorter than
  // original/high_freq_factor kept, and the ones between blended linearly in the inverse.
  const float low_wavelen = float(rope_original_context) / rope_low_freq_factor;
  const float high_wavelen = float(rope_original_context) / rope_high_freq_factor;
  for (int j = 0; j < hs / 2; ++j) {
    // The expression rope_cpu uses, so an unscaled table gives the very same rotations.
    float f = 1.0f / std::pow(rope_theta, float(2 * j) / float(hs));
    if (rope_scaling == RopeScaling::linear) {
      f /= rope_factor;
    } else if (rope_scaling == RopeScaling::llama3) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
      if (wavelen > low_wavelen) {
        f /= rope_factor;
      } else if (wavelen >= high_wavelen) {
        const float smooth = (float(rope_original_context) / wavelen - rope_low_freq_factor) /
                             (rope_high_freq_factor - rope_low_freq_factor);
        f = (1.0f - smooth) * f / rope_factor + smooth * f;
      }
    }
    if (!rope_freq_factors.empty()) f /= rope_freq_factors[std::size_t(j)];
    inv_freq[std::size_t(j)] = f;
  }
  return inv_freq;
}

void ModelConfig::validate(const std::string& source) const {
  auto fail = [&](const std::string& what) {
    throw Error(fmt::format("{}: invalid model configuration: {}", source, what));
  };
  const std::pair<const char*, int> dims[] = {
      {"dim", dim},         {"hidden_dim", hidden_dim}, {"n_layers", n_layers},
      {"n_heads", n_heads}, {"n_kv_heads", n_kv_heads}, {"vocab_size", vocab_size},
      {"seq_len", seq_len}};
  for (auto [name, value] : dims) {
    if (value <= 0) fail(fmt::format("{} = {} (must be positive)", name, value));
  }
  if (head_dim < 0) fail(fmt::format("head_dim = {} (must be positive, or 0 for dim / n_heads)",
                                     head_dim));
  if (head_dim == 0 && dim % n_heads != 0)
    fail(fmt::format("dim {} is not divisible by n_heads {}", dim, n_heads));
  if (n_heads % n_kv_heads != 0)
    fail(fmt::format("n_heads {} is not divisible by n_kv_heads {}", n_heads, n_kv_heads));
  if (head_size() % 2 != 0)
    fail(fmt::format("head size {} is odd (RoPE rotates pairs)", head_size()));
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta))
    fail(fmt::format("rope_theta = {} (must be positive)", rope_theta));
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps))
    fail(fmt::format("norm_eps = {} (must be positive)", norm_eps));
  if (rope_scaling != RopeScaling::none && (!(rope_factor >= 1.0f) || !std::isfinite(rope_factor)))
    fail(fmt::format("RoPE scaling factor = {} (must be at least 1)", rope_factor));
  if (!rope_freq_factors.empty()) {
    if (rope_freq_factors.size() != std::size_t(head_size() / 2))
      fail(fmt::format("{} RoPE frequency factors for a head size of {} (need {})",
                       rope_freq_factors.size(), head_size(), head_size() / 2));
    for (std::size_t j = 0; j < rope_freq_factors.size(); ++j) {
      if (!(rope_freq_factors[j] > 0.0f) || !std::isfinite(rope_freq_factors[j]))
        fail(fmt::format("RoPE frequency factor {} = {} (must be positive)", j,
                         rope_freq_factors[j]));
    }
  }
  if (rope_scaling == RopeScaling::llama3 &&
      (!(rope_low_freq_factor > 0.0f) || !(rope_high_freq_factor > rope_low_freq_factor) ||
       !std::isfinite(rope_high_freq_factor) || rope_original_context <= 0))
    fail(
        fmt::format("llama3 RoPE scaling needs 0 < low_freq_factor ({}) < high_freq_factor "
                    "({}) and a positive original context ({})",
                    rope_low_freq_factor, rope_high_freq_factor, rope_original_context));
  // Guard the size arithmetic: every tensor must be addressable with 64-bit offsets, and each
  // single matrix with int-sized dimensions products used by the kernels' row strides.
  constexpr double kMaxFloats = double(std::numeric_limits<std::int64_t>::max()) / 8;
  const double approx = double(vocab_size) * dim * 2 +
                        double(n_layers) * (4.0 * dim * double(n_heads) * head_size() +
                                            3.0 * dim * hidden_dim) +
                        double(seq_len) * dim;
  if (approx > kMaxFloats) fail("dimensions are too large");
}

namespace {

// Gives back the pages that lie wholly inside [p, p + n) of a read-only private file mapping:
// they leave this process's resident memory, and a later read faults them in from the file
// again (a MAP_PRIVATE page never written holds the file's bytes). Never for owned memory,
// where MADV_DONTNEED would zero the pages.
void release_file_pages(const float* p, std::size_t n) {
  const std::uintptr_t page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(p + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

std::size_t CpuLinears::bytes() const {
  std::size_t total = wcls.bytes();
  for (const auto* list : {&wq, &wk, &wv, &wo, &w1, &w2, &w3})
    for (const LinearWeight& m : *list) total += m.bytes();
  return total;
}

void Model::make_packed() {
  packed_ = std::make_shared<Packed>();
  packed_->config = config_;
  packed_->weights = weights_;
}

const CpuLinears& Model::cpu_linears() const {
  Packed& p = *packed_;
  std::call_once(p.once, [&p] {
    const ModelConfig& c = p.config;
    const Weights& w = p.weights;
    const std::size_t D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
    CpuLinears& out = p.linears;
    // Each matrix packed, then, for a mapped file, its pages in the file's layout given back:
    // the CPU forward pass reads only the packed copy, so a CPU run holds the linear weights
    // once (stories110M: 438 MB, not 876), and never both copies of more than one matrix.
    // Whatever still reads the file's layout (the CUDA upload, the matmul ladder's benchmarks)
    // faults the pages back in from the file, the same bytes.
    auto pack = [&p](std::vector<LinearWeight>& list, const float* m, std::size_t n,
                     std::size_t d) {
      list.push_back(LinearWeight{kernels::PackedMatrix(m, int(n), int(d)), {}});
      if (p.file_backed) release_file_pages(m, n * d);
    };
    for (int l = 0; l < c.n_layers; ++l) {
      pack(out.wq, w.wq + l * Q * D, D, Q);
      pack(out.wk, w.wk + l * KV * D, D, KV);
      pack(out.wv, w.wv + l * KV * D, D, KV);
      pack(out.wo, w.wo + l * D * Q, Q, D);
      pack(out.w1, w.w1 + l * H * D, D, H);
      pack(out.w2, w.w2 + l * D * H, H, D);
      pack(out.w3, w.w3 + l * H * D, D, H);
    }
    out.wcls.packed = kernels::PackedMatrix(w.wcls, c.dim, c.vocab_size);
    // A shared classifier is the embedding table, which every step reads: it stays.
    if (p.file_backed && !c.shared_classifier)
      release_file_pages(w.wcls, std::size_t(c.vocab_size) * D);
  });
  return p.linears;
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

std::size_t Model::body_floats(const ModelConfig& config) { return layout_of(config).total(); }

float* Model::owned_body() { return storage_->owned.data(); }

std::size_t Model::file_size_for(const ModelConfig& config) {
  return kHeaderBytes + layout_of(config).total() * sizeof(float);
}

void Model::bind_weights(const float* p) {
  const BodyLayout b = layout_of(config_);
  Weights& w = weights_;
  w.token_embedding = p;
  p += b.embedding;
  w.rms_att = p;
  p += b.rms_att;
  w.wq = p;
  p += b.wq;
  w.wk = p;
  p += b.wk;
  w.wv = p;
  p += b.wv;
  w.wo = p;
  p += b.wo;
  w.rms_ffn = p;
  p += b.rms_ffn;
  w.w1 = p;
  p += b.w1;
  w.w2 = p;
  p += b.w2;
  w.w3 = p;
  p += b.w3;
  w.rms_final = p;
  p += b.rms_final;
  p += b.freq_cis;
  w.wcls = config_.shared_classifier ? w.token_embedding : p;
}

Model Model::load(const std::string& path, const LoadOptions& options) {
  if (GgufFile::has_magic(path)) return load_gguf(path, options);
  auto fail = [&](const std::string& what) -> Error {
    return Error(fmt::format("cannot load model '{}': {}", path, what));
  };
  MappedFile file(path, fail);
  const std::size_t file_bytes = file.size();
  std::int32_t header[7];
  if (file_bytes < kHeaderBytes)
    throw fail(fmt::format("file is {} bytes, shorter than the 28-byte header", file_bytes));
  std::memcpy(header, file.data(), kHeaderBytes);
  ModelConfig c;
  c.dim = header[0];
  c.hidden_dim = header[1];
  c.n_layers = header[2];
  c.n_heads = header[3];
  c.n_kv_heads = header[4];
  // llama2.c's convention: a negative vocab_size means the classifier is stored separately.
  c.shared_classifier = header[5] > 0;
  if (header[5] == std::numeric_limits<std::int32_t>::min()) {
    throw fail(
        fmt::format("invalid model configuration: vocab_size = {} (its magnitude must be "
                    "positive and at most {})",
                    header[5], std::numeric_limits<std::int32_t>::max()));
  }
  c.vocab_size = std::abs(header[5]);
  c.seq_len = header[6];
  c.validate(path);
  const std::size_t expected = file_size_for(c);
  if (file_bytes != expected) {
    throw fail(fmt::format(
        "file is {} bytes but its header (dim {}, hidden {}, {} layers, {} heads, {} KV heads, "
        "vocab {}, seq_len {}, {} classifier) implies exactly {} bytes: the file is {}",
        file_bytes, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
        c.seq_len, c.shared_classifier ? "shared" : "separate", expected,
        file_bytes < expected ? "truncated" : "padded or not a llama2.c version-0 checkpoint"));
  }
  Model m;
  m.config_ = c;
  m.name_ = path;
  m.storage_ = std::make_unique<Storage>();
  const auto* body = reinterpret_cast<const float*>(file.data() + kHeaderBytes);
  m.storage_->map.emplace(std::move(file));
  check_finite_weights(body, c, path);
  m.bind_weights(body);
  m.make_packed();
  m.packed_->file_backed = true;
  return with_weights(std::move(m), options.weights);
}

Model Model::from_buffer(const ModelConfig& config, std::vector<float> body, std::string name) {
  config.validate(name);
  const std::size_t expected = layout_of(config).total();
  if (body.size() != expected) {
    throw Error(fmt::format("{}: buffer holds {} floats, the configuration needs {}", name,
                            body.size(), expected));
  }
  Model m;
  m.config_ = config;
  m.name_ = std::move(name);
  m.storage_ = std::make_unique<Storage>();
  m.storage_->owned = std::move(body);
  m.bind_weights(m.storage_->owned.data());
  m.make_packed();
  return m;
}

Model Model::first_layers_view(const Model& base, int n_layers) {
  if (n_layers < 1 || n_layers > base.config_.n_layers) {
    throw Error(fmt::format("exit layer {} is outside the model's layers [1, {}]", n_layers,
                            base.config_.n_layers));
  }
  Model m;
  m.config_ = base.config_;
  m.config_.n_layers = n_layers;
  // Per-layer tensors are indexed layer * stride from their first element, so the first
  // n_layers layers of base are exactly this model's layers; the final norm and classifier
  // pointers are base's own.
  m.weights_ = base.weights_;
  m.name_ = fmt::format("{} (first {} of {} layers)", base.name_, n_layers, base.config_.n_layers);
  // Its layers are base's first ones: the same packed matrices. No storage: the view owns
  // nothing.
  m.packed_ = base.packed_;
  return m;
}

void Model::save(const std::string& path) const {
  if (!storage_) throw Error(fmt::format("cannot save '{}': it is a view of another model", name_));
  if (!float_weights()) {
    throw Error(fmt::format("cannot save '{}' as a llama2.c file: its weights are stored in a "
                            "block format, not as float32",
                            name_));
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(fmt::format("cannot write model '{}'", path));
  const ModelConfig& c = config_;
  // The format's header has no field for either: such a model would be misread.
  if (c.head_size() != c.dim / c.n_heads || c.dim % c.n_heads != 0 ||
      !c.rope_freq_factors.empty()) {
    throw Error(fmt::format(
        "cannot save '{}' as a llama2.c checkpoint: its {} cannot be described by that "
        "format (save it as GGUF)",
        name_,
        c.rope_freq_factors.empty() ? fmt::format("head size {} (not dim / n_heads)", c.head_size())
                                    : std::string("RoPE frequency factors")));
  }
  const std::int32_t header[7] = {c.dim,        c.hidden_dim,
                                  c.n_layers,   c.n_heads,
                                  c.n_kv_heads, c.shared_classifier ? c.vocab_size : -c.vocab_size,
                                  c.seq_len};
  out.write(reinterpret_cast<const char*>(header), sizeof header);
  // The body is contiguous in both storages: from the embedding to the end.
  const std::size_t floats = layout_of(c).total();
  out.write(reinterpret_cast<const char*>(weights_.token_embedding),
            static_cast<std::streamsize>(floats * sizeof(float)));
  if (!out) throw Error(fmt::format("error while writing model '{}'", path));
}

}  // namespace inferlab
