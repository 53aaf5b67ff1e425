// GGUF variants beyond Llama 2's shapes, written by the core's GGUF writer and checked against
// an independent computation: a head width other than D / Nh (`attention.key_length`) and
// Llama 3.1's per-frequency RoPE factors (`rope_freqs.weight`). The reference below reads the
// file's tensors itself and runs the Llama forward pass in double precision with plain loops,
// sharing no code with the loader or the passes. Then vocabulary defects in a GGUF file: one
// line naming the file before any work.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/gguf_writer.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "test_support.hpp"

using namespace inferlab;
using test::TempFile;
namespace fs = std::filesystem;

namespace {

using Vec = std::vector<double>;

// The logits of every position of @p tokens for the Llama model in the GGUF file @p path, from
// its metadata and tensors alone: (T, V), row-major.
std::vector<double> reference_logits(const std::string& path, const std::vector<int>& tokens) {
  const GgufFile f = GgufFile::open(path);
  auto u32 = [&](const char* key) { return int(f.get_u32(std::string("llama.") + key)); };
  const int D = u32("embedding_length"), H = u32("feed_forward_length"), L = u32("block_count");
  const int Nh = u32("attention.head_count"), Nkv = u32("attention.head_count_kv");
  const int hs = u32("attention.key_length");
  const double theta = f.get_f32("llama.rope.freq_base");
  const double eps = f.get_f32("llama.attention.layer_norm_rms_epsilon");
  auto tensor = [&](const std::string& name) {
    const GgufTensor* t = f.find_tensor(name);
    REQUIRE(t != nullptr);
    std::vector<float> v(t->n_elements);
    kernels::dequantize_ref(t->type, t->data, v.data(), t->n_elements);
    return v;
  };
  const std::vector<float> embedding = tensor("token_embd.weight");
  const std::vector<float> classifier =
      f.find_tensor("output.weight") ? tensor("output.weight") : embedding;
  const std::vector<float> factors =
      f.find_tensor("rope_freqs.weight") ? tensor("rope_freqs.weight") : std::vector<float>{};
  const int V = int(embedding.size() / std::size_t(D));
  // y = W x, W stored (out, in) row-major.
  auto matvec = [](const std::vector<float>& W, const Vec& x, int out) {
    Vec y(std::size_t(out), 0.0);
    for (std::size_t o = 0; o < y.size(); ++o)
      for (std::size_t i = 0; i < x.size(); ++i) y[o] += double(W[o * x.size() + i]) * x[i];
    return y;
  };
  auto rmsnorm = [&](const Vec& x, const std::vector<float>& w) {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double scale = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    Vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * double(w[i]);
    return y;
  };
  // Adjacent pairs (2j, 2j + 1) of every head turn by pos * theta^(-2j/hs) / factor_j.
  auto rope = [&](Vec& v, int heads, int pos) {
    for (int h = 0; h < heads; ++h) {
      for (int j = 0; j < hs / 2; ++j) {
        double freq = std::pow(theta, -2.0 * j / hs);
        if (!factors.empty()) freq /= double(factors[std::size_t(j)]);
        const double c = std::cos(pos * freq), s = std::sin(pos * freq);
        double& a = v[std::size_t(h * hs + 2 * j)];
        double& b = v[std::size_t(h * hs + 2 * j + 1)];
        const double a0 = a, b0 = b;
        a = a0 * c - b0 * s;
        b = a0 * s + b0 * c;
      }
    }
  };

  const int T = int(tokens.size());
  std::vector<Vec> x(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) {
    const std::size_t row = std::size_t(tokens[std::size_t(t)]) * std::size_t(D);
    x[std::size_t(t)].assign(embedding.begin() + std::ptrdiff_t(row),
                             embedding.begin() + std::ptrdiff_t(row + std::size_t(D)));
  }
  for (int l = 0; l < L; ++l) {
    const std::string blk = fmt::format("blk.{}.", l);
    const auto attn_norm = tensor(blk + "attn_norm.weight"), wq = tensor(blk + "attn_q.weight"),
               wk = tensor(blk + "attn_k.weight"), wv = tensor(blk + "attn_v.weight"),
               wo = tensor(blk + "attn_output.weight"), ffn_norm = tensor(blk + "ffn_norm.weight"),
               w1 = tensor(blk + "ffn_gate.weight"), w2 = tensor(blk + "ffn_down.weight"),
               w3 = tensor(blk + "ffn_up.weight");
    std::vector<Vec> q, k, v;
    for (int t = 0; t < T; ++t) {
      const Vec xn = rmsnorm(x[std::size_t(t)], attn_norm);
      q.push_back(matvec(wq, xn, Nh * hs));
      k.push_back(matvec(wk, xn, Nkv * hs));
      v.push_back(matvec(wv, xn, Nkv * hs));
      rope(q.back(), Nh, t);
      rope(k.back(), Nkv, t);
    }
    for (int t = 0; t < T; ++t) {
      Vec att(std::size_t(Nh * hs), 0.0);
      for (int h = 0; h < Nh; ++h) {
        const int g = h / (Nh / Nkv);  // the KV head this query head reads
        Vec score(std::size_t(t + 1));
        double top = -1e300;
        for (int s = 0; s <= t; ++s) {
          double dot = 0.0;
          for (int i = 0; i < hs; ++i)
            dot += q[std::size_t(t)][std::size_t(h * hs + i)] *
                   k[std::size_t(s)][std::size_t(g * hs + i)];
          score[std::size_t(s)] = dot / std::sqrt(double(hs));
          top = std::max(top, score[std::size_t(s)]);
        }
        double sum = 0.0;
        for (double& e : score) sum += (e = std::exp(e - top));
        for (int s = 0; s <= t; ++s)
          for (int i = 0; i < hs; ++i)
            att[std::size_t(h * hs + i)] +=
                score[std::size_t(s)] / sum * v[std::size_t(s)][std::size_t(g * hs + i)];
      }
      const Vec o = matvec(wo, att, D);
      for (int i = 0; i < D; ++i) x[std::size_t(t)][std::size_t(i)] += o[std::size_t(i)];
      const Vec xn = rmsnorm(x[std::size_t(t)], ffn_norm);
      Vec gate = matvec(w1, xn, H);
      const Vec up = matvec(w3, xn, H);
      for (int i = 0; i < H; ++i) {
        const double a = gate[std::size_t(i)];
        gate[std::size_t(i)] = a / (1.0 + std::exp(-a)) * up[std::size_t(i)];
      }
      const Vec down = matvec(w2, gate, D);
      for (int i = 0; i < D; ++i) x[std::size_t(t)][std::size_t(i)] += down[std::size_t(i)];
    }
  }
  const std::vector<float> final_norm = tensor("output_norm.weight");
  std::vector<double> logits;
  for (int t = 0; t < T; ++t) {
    const Vec row = matvec(classifier, rmsnorm(x[std::size_t(t)], final_norm), V);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

// InferLab's logits for every position, from the file as Model::load reads it.
std::vector<float> inferlab_logits(const Model& model, const std::vector<int>& tokens) {
  ForwardPass pass(model);
  KVCache cache(model.config(), int(tokens.size()));
  std::vector<float> logits;
  pass.forward(tokens, 0, cache, LogitsMode::all, logits);
  return logits;
}

ModelConfig tiny_config(int dim, int heads, int kv_heads, int head_dim) {
  ModelConfig c;
  c.dim = dim;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.vocab_size = 40;
  c.seq_len = 16;
  c.shared_classifier = false;
  return c;
}

void check_against_reference(const Model& loaded, const std::string& path) {
  const std::vector<int> tokens = {1, 7, 30, 2, 19, 11, 5};
  const std::vector<float> got = inferlab_logits(loaded, tokens);
  const std::vector<double> want = reference_logits(path, tokens);
  REQUIRE(got.size() == want.size());
  const test::CloseReport r = test::all_close(got, want, long(want.size()), 1e-4, 1e-4);
  INFO("max |error| " << r.max_abs_err << ", first mismatch at " << r.first_bad);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("gguf models: a head width other than D / Nh is read from key_length and used",
          "[unit][gguf]") {
  // Queries wider than the stream (4 x 16 = 64 > 32) and narrower (4 x 8 = 32 < 64).
  for (const auto& [dim, head_dim] : {std::pair{32, 16}, std::pair{64, 8}}) {
    CAPTURE(dim, head_dim);
    const ModelConfig c = tiny_config(dim, 4, 2, head_dim);
    const Model original = make_synthetic_model(c, {}, "wide-heads");
    const TempFile file("heads", ".gguf");
    original.save_gguf(file.str());
    CHECK(GgufFile::open(file.str()).get_u32("llama.attention.key_length") ==
          std::uint32_t(head_dim));
    const Model loaded = Model::load(file.str());
    const ModelConfig& l = loaded.config();
    CHECK(l.head_size() == head_dim);
    CHECK(l.q_dim() == 4 * head_dim);
    CHECK(l.kv_dim() == 2 * head_dim);
    check_against_reference(loaded, file.str());
    // The KV calculator and the allocation both count 2 x L x Nkv x hs numbers per token.
    const double per_token = 2.0 * 2 * 2 * head_dim * sizeof(float);
    CHECK(kv_bytes_per_token(l, DType::f32) == per_token);
    CHECK(double(KVCache(l, 8).bytes_per_token()) == per_token);
    // llama2.c's header cannot say it: refused, not written wrong.
    if (head_dim != dim / 4) {
      CHECK_THROWS_WITH(loaded.save(file.str() + ".bin"), Catch::Contains("head size"));
    }
  }
}

TEST_CASE("gguf models: Llama 3.1's rope_freqs.weight is read and divides the frequencies",
          "[unit][gguf]") {
  ModelConfig c = tiny_config(32, 4, 2, 0);  // hs 8: four frequencies
  c.rope_theta = 500000.0f;
  c.rope_freq_factors = {1.0f, 2.0f, 8.0f, 32.0f};
  const Model original = make_synthetic_model(c, {}, "rope-factors");
  const TempFile file("freqs", ".gguf");
  original.save_gguf(file.str());
  REQUIRE(GgufFile::open(file.str()).find_tensor("rope_freqs.weight") != nullptr);
  const Model loaded = Model::load(file.str());
  CHECK(loaded.config().rope_freq_factors == c.rope_freq_factors);
  const std::vector<float> inv = loaded.config().rope_inv_freq();
  for (std::size_t j = 0; j < 4; ++j)
    CHECK(inv[j] == 1.0f / std::pow(500000.0f, float(2 * j) / 8.0f) / c.rope_freq_factors[j]);
  check_against_reference(loaded, file.str());
  // The factors change the logits: they are applied, not only stored.
  ModelConfig plain = c;
  plain.rope_freq_factors.clear();
  const std::vector<int> tokens = {1, 7, 30, 2, 19, 11, 5};
  CHECK(inferlab_logits(make_synthetic_model(plain, {}, "rope-factors"), tokens) !=
        inferlab_logits(loaded, tokens));
  // Factors of the wrong count or sign are refused.
  ModelConfig bad = c;
  bad.rope_freq_factors.pop_back();
  CHECK_THROWS_WITH(bad.validate("x"), Catch::Contains("3 RoPE frequency factors"));
  bad.rope_freq_factors = {1.0f, 2.0f, 0.0f, 4.0f};
  CHECK_THROWS_WITH(bad.validate("x"), Catch::Contains("factor 2 = 0"));
}

TEST_CASE("gguf vocabularies: a merge naming an unknown token, a piece that is not UTF-8",
          "[unit][gguf][tokenizer]") {
  auto write_vocabulary = [](const std::string& path, const std::vector<std::string>& tokens,
                             const std::vector<std::string>& merges) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "gpt-2");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_string_array("tokenizer.ggml.merges", merges);
    w.write(path);
  };
  const TempFile file("vocab", ".gguf");
  write_vocabulary(file.str(), {"a", "b", "ab"}, {"a b"});
  CHECK(Tokenizer::load(file.str()).encode("ab", false) == std::vector<int>{2});
  auto error_of = [&](const std::vector<std::string>& tokens,
                      const std::vector<std::string>& merges) {
    write_vocabulary(file.str(), tokens, merges);
    try {
      Tokenizer::load(file.str());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string merge = error_of({"a", "b", "ab"}, {"a b", "ab zz"});
  CHECK_THAT(merge, Catch::Contains(file.str()) &&
                        Catch::Contains("merge 1 'ab zz' names 'zz', which is not a token"));
  CHECK(merge.find('\n') == std::string::npos);
  const std::string utf8 = error_of({"a", "b\xC3", "ab"}, {"a b"});
  CHECK_THAT(utf8, Catch::Contains(file.str()) &&
                       Catch::Contains("token 1 is not valid UTF-8 (byte 1: 0xC3)"));
  CHECK(utf8.find('\n') == std::string::npos);
}

TEST_CASE("the named shape smollm2-135m is SmolLM2-135M-Instruct's file's shape", "[model]") {
  // The file's metadata only (no weights converted): the calculators' shape is the model's.
  const GgufFile f = GgufFile::open(test::model_file("SmolLM2-135M-Instruct.Q4_1.gguf"));
  const ModelConfig c = named_config("smollm2-135m");
  auto u32 = [&](const char* key) { return int(f.get_u32(std::string("llama.") + key)); };
  CHECK(c.dim == u32("embedding_length"));
  CHECK(c.hidden_dim == u32("feed_forward_length"));
  CHECK(c.n_layers == u32("block_count"));
  CHECK(c.n_heads == u32("attention.head_count"));
  CHECK(c.n_kv_heads == u32("attention.head_count_kv"));
  const bool key_length = f.find("llama.attention.key_length") != nullptr;
  CHECK(c.head_size() == (key_length ? u32("attention.key_length")
                                     : u32("embedding_length") / u32("attention.head_count")));
  CHECK(c.seq_len == u32("context_length"));
  CHECK(c.rope_theta == f.get_f32("llama.rope.freq_base"));
  CHECK(std::uint64_t(c.vocab_size) == f.find_tensor("token_embd.weight")->ne[1]);
  CHECK(c.shared_classifier == (f.find_tensor("output.weight") == nullptr));
  // 2 x 30 layers x 3 KV heads x 64 x 4 bytes, as the allocation counts it.
  CHECK(kv_bytes_per_token(c, DType::f32) == 46080.0);
  CHECK(KVCache(c, 4).bytes_per_token() == 46080u);
}
