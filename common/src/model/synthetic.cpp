// Named real model shapes and a deterministic random-weight generator for them.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <omp.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/input_checks.hpp"
#include "inferlab/model/model.hpp"

#include "legacy_rope_tables.hpp"

namespace inferlab {

namespace {

struct NamedShape {
  const char* name;
  ModelConfig config;
};

ModelConfig make(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int seq,
                 bool shared, float theta = 10000.0f) {
  ModelConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.vocab_size = vocab;
  c.seq_len = seq;
  c.shared_classifier = shared;
  c.rope_theta = theta;
  return c;
}

// Shapes of published checkpoints (config.json / params.json of each release).
const NamedShape kShapes[] = {
    {"stories260K", make(64, 172, 5, 8, 4, 512, 512, true)},
    {"stories15M", make(288, 768, 6, 6, 6, 32000, 256, true)},
    {"stories42M", make(512, 1376, 8, 8, 8, 32000, 1024, true)},
    {"stories110M", make(768, 2048, 12, 12, 12, 32000, 1024, true)},
    {"llama2-7b", make(4096, 11008, 32, 32, 32, 32000, 4096, false)},
    {"llama3-8b", make(4096, 14336, 32, 32, 8, 128256, 8192, false, 500000.0f)},
    {"llama3-70b", make(8192, 28672, 80, 64, 8, 128256, 8192, false, 500000.0f)},
    {"mistral-7b", make(4096, 14336, 32, 32, 8, 32000, 32768, false, 1000000.0f)},
    {"smollm2-135m", make(576, 1536, 30, 9, 3, 49152, 8192, true, 100000.0f)},
};

// Counter-based generator: value i of stream s depends only on (seed, s, i), so tensors can be
// filled in parallel and the result never depends on the thread count.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill_uniform(float* out, std::size_t n, float scale, std::uint64_t seed,
                  std::uint64_t stream) {
  const std::uint64_t key = splitmix64(seed ^ splitmix64(stream));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const std::uint64_t r = splitmix64(key + static_cast<std::uint64_t>(i));
    const float u = static_cast<float>(r >> 40) / 16777216.0f;  // [0, 1), 24 bits
    out[i] = (2.0f * u - 1.0f) * scale;
  }
}

}  // namespace

ModelConfig named_config(const std::string& name) {
  for (const auto& s : kShapes) {
    if (name == s.name) return s.config;
  }
  std::string known;
  for (const auto& s : kShapes) known += std::string(known.empty() ? "" : ", ") + s.name;
  throw Error(fmt::format("unknown model shape '{}' (known: {})", name, known));
}

std::vector<std::string> named_config_names() {
  std::vector<std::string> names;
  for (const auto& s : kShapes) names.emplace_back(s.name);
  return names;
}

void fill_legacy_rope_tables(const ModelConfig& c, float* tables) {
  const std::size_t S = c.seq_len, hs = c.head_size();
  float* real = tables;
  float* imag = tables + S * hs / 2;
  for (std::size_t pos = 0; pos < S; ++pos) {
    for (std::size_t i = 0; i < hs / 2; ++i) {
      const double freq = std::pow(double(c.rope_theta), -2.0 * double(i) / double(hs));
      real[pos * hs / 2 + i] = float(std::cos(double(pos) * freq));
      imag[pos * hs / 2 + i] = float(std::sin(double(pos) * freq));
    }
  }
}

Model make_synthetic_model(const std::string& shape, const SyntheticOptions& options) {
  return make_synthetic_model(named_config(shape), options, shape);
}

Model make_synthetic_model(const ModelConfig& base, const SyntheticOptions& options,
                           const std::string& name) {
  ModelConfig c = base;
  if (options.max_layers < 0) throw Error("synthetic model: max_layers must be >= 0");
  if (options.seq_len < 0) throw Error("synthetic model: seq_len must be >= 0");
  if (options.max_layers > 0 && options.max_layers < c.n_layers) c.n_layers = options.max_layers;
  if (options.seq_len > 0) c.seq_len = options.seq_len;
  const std::string full_name =
      fmt::format("synthetic:{}(seed={}{}{})", name, options.seed,
                  c.n_layers != base.n_layers ? fmt::format(", layers={}", c.n_layers) : "",
                  c.seq_len != base.seq_len ? fmt::format(", seq_len={}", c.seq_len) : "");
  c.validate(full_name);

  const std::size_t L = c.n_layers, D = c.dim, H = c.hidden_dim, V = c.vocab_size;
  const std::size_t Q = c.q_dim(), KV = c.kv_dim(), S = c.seq_len, hs = c.head_size();
  const std::size_t total = (Model::file_size_for(c) - 28) / sizeof(float);
  require_allocation(double(total) * sizeof(float),
                     fmt::format("the synthetic model {} ({:.2f}B parameters)", full_name,
                                 double(c.n_params()) / 1e9));
  std::vector<float> body(total);
  float* p = body.data();
  std::uint64_t stream = 0;
  // Uniform(-a, a) with a = 1/sqrt(fan_in) keeps each linear layer's output at the scale of its
  // input, so activations neither vanish nor explode through the layers.
  auto linear = [&](std::size_t rows, std::size_t cols) {
    fill_uniform(p, L * rows * cols, 1.0f / std::sqrt(float(cols)), options.seed, ++stream);
    p += L * rows * cols;
  };
  auto ones = [&](std::size_t n) {
    std::fill(p, p + n, 1.0f);
    p += n;
  };
  // Token embedding at the classifier's scale, so that a shared classifier gives logits of order
  // one (a realistic, not one-hot, next-token distribution).
  fill_uniform(p, V * D, 1.0f / std::sqrt(float(D)), options.seed, ++stream);
  p += V * D;
  ones(L * D);    // rms_att
  linear(Q, D);   // wq
  linear(KV, D);  // wk
  linear(KV, D);  // wv
  linear(D, Q);   // wo
  ones(L * D);    // rms_ffn
  linear(H, D);   // w1
  linear(D, H);   // w2
  linear(H, D);   // w3
  ones(D);        // rms_final
  fill_legacy_rope_tables(c, p);
  p += S * hs;
  if (!c.shared_classifier) {
    fill_uniform(p, V * D, 1.0f / std::sqrt(float(D)), options.seed, ++stream);
    p += V * D;
  }
  return Model::with_weights(Model::from_buffer(c, std::move(body), full_name), options.weights);
}

}  // namespace inferlab
