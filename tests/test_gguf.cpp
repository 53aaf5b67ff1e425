// GGUF files: the tensor storage formats, the reader (every bad input refused with one clear
// line), the writer, and the real SmolLM2 file and llama.cpp vocabularies when present.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/gguf_writer.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/runtime/forward.hpp"
#include "small_models.hpp"
#include "test_support.hpp"

using namespace inferlab;
using test::logits_of;
using test::small_block_config;
using Catch::Matchers::Contains;
using kernels::TensorType;
namespace fs = std::filesystem;

namespace {

// A GGUF image written to a scratch file that removes itself.
struct GgufTemp {
  fs::path path;
  explicit GgufTemp(const std::string& bytes, const std::string& tag = "t")
      : path(fs::temp_directory_path() /
             ("inferlab_gguf_" + tag + "_" + std::to_string(::getpid()) + ".gguf")) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  ~GgufTemp() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string str() const { return path.string(); }
};

void put_half(std::uint8_t* p, float x) {
  // Only values exactly representable in float16 are used below: 0.5, 0.25, -1, 2.
  std::uint16_t bits = 0;
  if (x == 0.5f) bits = 0x3800;
  if (x == 0.25f) bits = 0x3400;
  if (x == -1.0f) bits = 0xBC00;
  if (x == 2.0f) bits = 0x4000;
  std::memcpy(p, &bits, 2);
}

template <class T>
void poke(std::string& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A small file with one value of every metadata type and two tensors.
GgufWriter small_writer() {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("a.u32", 7);
  w.add_i32("a.i32", -3);
  w.add_u64("a.u64", 1ull << 40);
  w.add_f32("a.f32", 0.5f);
  w.add_f64("a.f64", 1e-6);
  w.add_bool("a.bool", true);
  w.add_string_array("a.strings", {"", "hello", "w\xc3\xb6rld"});
  w.add_f32_array("a.floats", {1.5f, -2.0f});
  w.add_i32_array("a.ints", {1, -1, 5});
  const std::vector<float> a = random_floats(64 * 3, 1), b = random_floats(64, 2);
  w.add_tensor("first", {64, 3}, TensorType::kF32, a.data());
  w.add_tensor("second", {64}, TensorType::kQ8_0, b.data());
  return w;
}

// Writes @p bytes to a scratch file and calls @p load on its path, which must throw one
// inferlab::Error line containing @p expected and naming the file.
template <class Load>
void expect_refused(const std::string& bytes, const std::string& expected, Load load) {
  const GgufTemp bad(bytes, "bad");
  CAPTURE(expected);
  try {
    load(bad.str());
    FAIL("accepted");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains(expected));
    CHECK_THAT(msg, Contains(bad.str()));
    CHECK(msg.find('\n') == std::string::npos);
  }
}

// The byte offset just past the metadata of small_writer()'s image (where tensor infos start).
std::size_t tensor_infos_offset(const GgufFile& f) {
  const GgufValue& last = f.metadata().back();
  const auto* base = f.tensors()[0].data - f.data_offset() - f.tensors()[0].offset;
  return std::size_t(last.data + last.bytes - base);
}

}  // namespace

TEST_CASE("quant formats: hand-built blocks dequantize to their values", "[unit][kernel]") {
  SECTION("Q8_0: d then 32 int8") {
    std::uint8_t block[34];
    put_half(block, 0.5f);
    for (int j = 0; j < 32; ++j) block[2 + j] = std::uint8_t(std::int8_t(j - 16));
    float out[32];
    kernels::dequantize_ref(TensorType::kQ8_0, block, out, 32);
    for (int j = 0; j < 32; ++j) CHECK(out[j] == 0.5f * float(j - 16));
  }
  SECTION("Q4_0: low nibbles are elements 0..15, high nibbles 16..31, (q - 8) * d") {
    std::uint8_t block[18];
    put_half(block, 0.25f);
    for (int j = 0; j < 16; ++j) block[2 + j] = std::uint8_t(j | ((15 - j) << 4));
    float out[32];
    kernels::dequantize_ref(TensorType::kQ4_0, block, out, 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(out[j] == 0.25f * float(j - 8));
      CHECK(out[16 + j] == 0.25f * float(15 - j - 8));
    }
  }
  SECTION("Q4_1: d, m, then nibbles; q * d + m") {
    std::uint8_t block[20];
    put_half(block, 2.0f);
    put_half(block + 2, -1.0f);
    for (int j = 0; j < 16; ++j) block[4 + j] = std::uint8_t(j | ((j / 2) << 4));
    float out[32];
    kernels::dequantize_ref(TensorType::kQ4_1, block, out, 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(out[j] == 2.0f * float(j) - 1.0f);
      CHECK(out[16 + j] == 2.0f * float(j / 2) - 1.0f);
    }
  }
  SECTION("F16 and BF16") {
    const std::uint16_t f16[2] = {0x3C00, 0xC000};   // 1, -2
    const std::uint16_t bf16[2] = {0x3F80, 0x4040};  // 1, 3
    float out[2];
    kernels::dequantize_ref(TensorType::kF16, f16, out, 2);
    CHECK(out[0] == 1.0f);
    CHECK(out[1] == -2.0f);
    kernels::dequantize_ref(TensorType::kBF16, bf16, out, 2);
    CHECK(out[0] == 1.0f);
    CHECK(out[1] == 3.0f);
  }
  SECTION("a count that is not whole blocks is refused") {
    std::uint8_t block[34] = {};
    float out[32];
    REQUIRE_THROWS_WITH(kernels::dequantize_ref(TensorType::kQ8_0, block, out, 31),
                        Contains("not a whole number of 32-number blocks"));
  }
}

TEST_CASE("quant formats: quantize then dequantize stays within half a step", "[unit][kernel]") {
  const std::vector<float> x = random_floats(32 * 8, 7);
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                       TensorType::kQ4_0, TensorType::kQ4_1}) {
    CAPTURE(kernels::ggml_type_name(std::uint32_t(t)));
    std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, x.size()));
    kernels::quantize_ref(t, x.data(), packed.data(), x.size());
    std::vector<float> y(x.size());
    kernels::dequantize_ref(t, packed.data(), y.data(), x.size());
    // Worst error per format for values in [-1, 1]: half a step (plus the float16 scale's
    // own rounding for the block formats), a whole one where Q4_0 clips.
    const float tol = t == TensorType::kF32    ? 0.0f
                      : t == TensorType::kF16  ? 1e-3f
                      : t == TensorType::kBF16 ? 4e-3f
                      : t == TensorType::kQ8_0 ? 1.0f / 127 * 0.5f + 1e-3f
                      : t == TensorType::kQ4_0 ? 1.0f / 8 + 1e-3f  // +max clips to 7 steps
                                               : 2.0f / 15 * 0.5f + 1e-3f;
    float worst = 0.0f;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
    CHECK(worst <= tol);
  }
  CHECK(kernels::ggml_type_name(14) == "Q6_K");
  CHECK(kernels::ggml_type_name(4) == "type 4");
  CHECK(kernels::ggml_type_name(999) == "type 999");
}

TEST_CASE("gguf: the writer's file reads back, every value type and tensor", "[unit]") {
  const GgufTemp file(small_writer().bytes(), "roundtrip");
  const GgufFile f = GgufFile::open(file.str());
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.data_offset() % 32 == 0);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("a.u32") == 7);
  CHECK(f.get_i64("a.i32") == -3);
  CHECK(f.get_u64("a.u64") == (1ull << 40));
  CHECK(f.get_f32("a.f32") == 0.5f);
  CHECK(f.get_f32("a.f64") == 1e-6f);
  CHECK(f.get_bool("a.bool"));
  CHECK(f.get_array<std::string_view>("a.strings") ==
        std::vector<std::string_view>{"", "hello", "w\xc3\xb6rld"});
  CHECK(f.get_array<float>("a.floats") == std::vector<float>{1.5f, -2.0f});
  CHECK(f.get_array<std::int32_t>("a.ints") == std::vector<std::int32_t>{1, -1, 5});
  CHECK(f.find("missing") == nullptr);

  REQUIRE(f.tensors().size() == 2);
  const GgufTensor* first = f.find_tensor("first");
  REQUIRE(first != nullptr);
  CHECK(first->describe() == "[64, 3] F32");
  CHECK(first->n_bytes == 64 * 3 * 4);
  const std::vector<float> a = random_floats(64 * 3, 1);
  CHECK(std::memcmp(first->data, a.data(), first->n_bytes) == 0);
  const GgufTensor* second = f.find_tensor("second");
  REQUIRE(second != nullptr);
  CHECK(second->type == TensorType::kQ8_0);
  CHECK(second->n_bytes == 2 * 34);
  CHECK(second->offset % 32 == 0);
  CHECK(std::size_t(second->data - first->data) == second->offset);

  SECTION("accessors name the file, the key and the type mismatch") {
    CHECK_THROWS_WITH(f.get_u32("nope"),
                      Contains("metadata key 'nope' is missing") && Contains(file.str()));
    CHECK_THROWS_WITH(f.get_u32("a.f32"), Contains("'a.f32' is a f32, expected an integer"));
    CHECK_THROWS_WITH(f.get_u32("a.i32"), Contains("holds -3, outside [0, 4294967295]"));
    CHECK_THROWS_WITH(f.get_string("a.u32"), Contains("expected a string"));
    CHECK_THROWS_WITH(f.get_array<float>("a.strings"),
                      Contains("is an array of string, expected an array of f32"));
    CHECK_THROWS_WITH(f.get_array<std::uint32_t>("a.ints"), Contains("holds -1"));
  }
  SECTION("a non-default alignment is recorded and honoured") {
    GgufWriter w(64);
    const std::vector<float> v = random_floats(32, 3);
    w.add_tensor("x", {32}, TensorType::kF16, v.data());
    w.add_tensor("y", {32}, TensorType::kBF16, v.data());
    const GgufTemp f64(w.bytes(), "align");
    const GgufFile g = GgufFile::open(f64.str());
    CHECK(g.alignment() == 64);
    CHECK(g.get_u32("general.alignment") == 64);
    CHECK(g.data_offset() % 64 == 0);
    CHECK(g.find_tensor("y")->offset == 64);
  }
  SECTION("the writer refuses duplicates") {
    GgufWriter w;
    w.add_u32("k", 1);
    CHECK_THROWS_WITH(w.add_string("k", "x"), Contains("'k' added twice"));
    w.add_tensor("t", {32}, TensorType::kF32, a.data());
    CHECK_THROWS_WITH(w.add_tensor("t", {32}, TensorType::kF32, a.data()),
                      Contains("'t' added twice"));
  }
}

TEST_CASE("gguf: every bad input is refused with one line naming the file", "[unit]") {
  const std::string good = small_writer().bytes();
  const GgufTemp good_file(good, "good");
  const GgufFile g = GgufFile::open(good_file.str());
  const std::size_t infos = tensor_infos_offset(g);
  const std::size_t data = g.data_offset();

  auto refuse = [](const std::string& bytes, const std::string& expected) {
    expect_refused(bytes, expected, [](const std::string& path) { GgufFile::open(path); });
  };

  SECTION("truncated at every section boundary and inside each section") {
    refuse(good.substr(0, 0), "shorter than the 24-byte GGUF header");
    refuse(good.substr(0, 23), "shorter than the 24-byte GGUF header");
    refuse(good.substr(0, 24), "announces 10 metadata entries");
    refuse(good.substr(0, infos - 5), "'a.ints' announces 3 i32 elements, more than the 7");
    refuse(good.substr(0, infos - 14), "metadata entry 10 of 10 ('a.ints') needs 8 bytes");
    refuse(good.substr(0, infos), "tensor info 1 of 2 needs 8 bytes");
    refuse(good.substr(0, infos + 40), "tensor info");
    refuse(good.substr(0, data), "runs past the end of the file");
    refuse(good.substr(0, data + 768 + 67), "tensor 'second' ([64] Q8_0, 68 bytes");
  }
  SECTION("wrong magic, unsupported or big-endian version") {
    std::string b = good;
    b[0] = 'X';
    refuse(b, "not a GGUF file (it starts with bytes 58 47 55 46");
    b = good;
    poke<std::uint32_t>(b, 4, 1);
    refuse(b, "GGUF version 1 is not supported (InferLab reads versions 2 and 3)");
    poke<std::uint32_t>(b, 4, 0x03000000);
    refuse(b, "big-endian GGUF files are not supported");
  }
  SECTION("counts and lengths larger than the file, checked before allocating") {
    std::string b = good;
    poke<std::uint64_t>(b, 16, ~std::uint64_t(0));
    refuse(b, "announces 18446744073709551615 metadata entries");
    b = good;
    poke<std::uint64_t>(b, 8, std::uint64_t(1) << 60);
    refuse(b, "announces 1152921504606846976 tensors");
    b = good;
    poke<std::uint64_t>(b, 24, std::uint64_t(1) << 62);  // the first key's length
    refuse(b, "metadata entry 1 of 10: a string of 4611686018427387904 bytes");
    // The string array's count (key "a.strings": its entry follows the bool's).
    const GgufValue& strings = *g.find("a.strings");
    const std::size_t count_at =
        std::size_t(strings.data - (g.tensors()[0].data - data - g.tensors()[0].offset)) - 8;
    b = good;
    poke<std::uint64_t>(b, count_at, std::uint64_t(1) << 61);
    refuse(b, "'a.strings' announces 2305843009213693952 strings");
  }
  SECTION("unknown value types, arrays of arrays, duplicate keys") {
    std::string b = good;
    const std::size_t type_at = 24 + 8 + std::strlen("general.architecture");
    poke<std::uint32_t>(b, type_at, 13);
    refuse(b, "metadata key 'general.architecture' has unknown value type 13");
    GgufWriter w;
    w.add_u32("x", 1);
    w.add_u32("y", 2);
    b = w.bytes();
    b[24 + 8] = 'y';  // "x" becomes a second "y"
    refuse(b, "duplicate metadata key 'y'");
  }
  SECTION("tensor infos: dimensions, types, alignment, bounds, overlap, duplicates") {
    const std::size_t first_dims = infos + 8 + 5;  // after the name "first"
    std::string b = good;
    poke<std::uint32_t>(b, first_dims, 5);
    refuse(b, "tensor 'first' has 5 dimensions (1 to 4 are valid)");
    b = good;
    poke<std::uint64_t>(b, first_dims + 4 + 8, 0);
    refuse(b, "tensor 'first' has dimension 1 = 0 (empty)");
    const std::size_t first_type = first_dims + 4 + 16;
    b = good;
    poke<std::uint32_t>(b, first_type, 13);
    refuse(b,
           "tensor 'first' has type Q5_K, which InferLab does not read (supported: F32, F16, "
           "BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K)");
    b = good;
    poke<std::uint32_t>(b, first_type, 8);  // Q8_0 rows must be multiples of 32: 64 is
    poke<std::uint64_t>(b, first_dims + 4, 48);
    refuse(b, "its first dimension is not a multiple of the 32-number block");
    b = good;
    poke<std::uint64_t>(b, first_type + 4, 4);
    refuse(b, "tensor 'first' starts at data offset 4, not a multiple of the alignment 32");
    b = good;
    poke<std::uint64_t>(b, first_type + 4, std::uint64_t(1) << 50);
    refuse(b, "tensor 'first' ([64, 3] F32, 768 bytes at file offset");
    // The second tensor moved onto the first one's bytes.
    const std::size_t second_offset = first_type + 4 + 8 + 8 + 6 + 4 + 8 + 4;
    b = good;
    poke<std::uint64_t>(b, second_offset, 512);
    refuse(b, "tensors 'first' (data bytes [0, 768)) and 'second' (from 512) overlap");
    b = good;
    std::memcpy(b.data() + first_type + 4 + 8 + 8, "first\0", 6);  // name "second" -> "first"
    poke<std::uint64_t>(b, first_type + 4 + 8, 5);
    b.erase(first_type + 4 + 8 + 8 + 5, 1);
    refuse(b, "duplicate tensor name 'first'");
  }
  SECTION("a bad general.alignment") {
    GgufWriter w;
    w.add_u32("general.alignment", 48);
    refuse(w.bytes(), "general.alignment 48 is not a power of two");
  }
  SECTION("a FIFO or a directory is refused before open") {
    CHECK_THROWS_WITH(GgufFile::open(fs::temp_directory_path().string()),
                      Contains("cannot read GGUF file"));
    CHECK_FALSE(GgufFile::has_magic(fs::temp_directory_path().string()));
    CHECK(GgufFile::has_magic(good_file.str()));
  }
}

TEST_CASE("gguf: SmolLM2-135M-Instruct's file reads", "[model]") {
  const std::string path =
      test::require_file(test::models_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf");
  const GgufFile f = GgufFile::open(path);
  CHECK(f.version() == 3);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("llama.block_count") == 30);
  CHECK(f.get_u32("llama.embedding_length") == 576);
  CHECK(f.get_u32("llama.attention.head_count_kv") == 3);
  CHECK(f.get_f32("llama.rope.freq_base") == 100000.0f);
  CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
  CHECK(f.get_array<std::string_view>("tokenizer.ggml.tokens").size() == 49152);
  CHECK(f.get_array<std::string_view>("tokenizer.ggml.merges").size() == 48900);
  CHECK(f.tensors().size() == 272);
  CHECK(f.find_tensor("token_embd.weight")->describe() == "[576, 49152] Q8_0");
  CHECK(f.find_tensor("blk.0.attn_k.weight")->describe() == "[576, 192] Q4_1");
  CHECK(f.find_tensor("blk.29.ffn_down.weight")->describe() == "[1536, 576] Q4_1");
  CHECK(f.find_tensor("output_norm.weight")->describe() == "[576] F32");
  CHECK(f.find_tensor("output.weight") == nullptr);
  const GgufTensor& last = f.tensors().back();
  CHECK(f.data_offset() + last.offset + last.n_bytes <= f.file_bytes());
}

TEST_CASE("gguf: llama.cpp's vocabulary files read", "[model]") {
  // $INFERLAB_TOKENIZERS, else the tokenizers/ folder beside the models folder.
  const char* env = std::getenv("INFERLAB_TOKENIZERS");
  const fs::path dir = env && *env ? fs::path(env) : test::models_dir() / ".." / "tokenizers";
  for (const char* name :
       {"ggml-vocab-deepseek-coder.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf",
        "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-qwen2.gguf"}) {
    CAPTURE(name);
    const GgufFile f = GgufFile::open(test::require_file(dir / name));
    CHECK(f.tensors().empty());
    const auto tokens = f.get_array<std::string_view>("tokenizer.ggml.tokens");
    CHECK(tokens.size() > 30000);
    CHECK_FALSE(f.get_string("tokenizer.ggml.model").empty());
  }
}

namespace {

// The weights a file of this type holds for these floats: quantized, then read back.
std::vector<float> through(TensorType t, const float* x, std::size_t n) {
  std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, n));
  kernels::quantize_ref(t, x, packed.data(), n);
  std::vector<float> y(n);
  kernels::dequantize_ref(t, packed.data(), y.data(), n);
  return y;
}

std::size_t find_bytes(const std::string& haystack, const std::string& needle) {
  const std::size_t at = haystack.find(needle);
  REQUIRE(at != std::string::npos);
  return at;
}

}  // namespace

TEST_CASE(
    "gguf models: every tensor type and classifier reads back as the same weights and "
    "gives the logits of the same weights in llama2.c form",
    "[invariant]") {
  const std::vector<int> tokens = {1, 5, 17, 42, 95, 3, 60};
  for (bool shared : {true, false}) {
    const Model original = make_synthetic_model(small_block_config(shared), {}, "small");
    for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                         TensorType::kQ4_0, TensorType::kQ4_1}) {
      CAPTURE(shared, kernels::ggml_type_name(std::uint32_t(t)));
      const GgufTemp file("", "model");
      original.save_gguf(file.str(), t);
      REQUIRE(GgufFile::has_magic(file.str()));
      // Detected from the magic; every tensor converted to float32 (the float reference).
      const Model loaded = Model::load(file.str(), LoadOptions{WeightFormat::f32});
      const ModelConfig& c = loaded.config();
      CHECK(c.dim == 64);
      CHECK(c.n_kv_heads == 4);
      CHECK(c.shared_classifier == shared);
      CHECK(c.rope_theta == original.config().rope_theta);
      CHECK((GgufFile::open(file.str()).find_tensor("output.weight") == nullptr) == shared);
      CHECK_THAT(loaded.load_note(), Contains("converted to float32 at load"));
      // Each linear weight is what the type stores for the original floats, bit for bit.
      const std::size_t wq = std::size_t(c.n_layers) * c.dim * c.dim;
      CHECK(std::vector<float>(loaded.weights().wq, loaded.weights().wq + wq) ==
            through(t, original.weights().wq, wq));
      const std::size_t emb = std::size_t(c.vocab_size) * c.dim;
      CHECK(std::vector<float>(loaded.weights().wcls, loaded.weights().wcls + emb) ==
            through(t, original.weights().wcls, emb));
      // The same weights written as a llama2.c checkpoint give the same logits.
      const GgufTemp legacy("", "legacy");
      loaded.save(legacy.str());
      const Model as_legacy = Model::load(legacy.str());
      CHECK(as_legacy.load_note().empty());
      CHECK(logits_of(loaded, tokens) == logits_of(as_legacy, tokens));
      if (t == TensorType::kF32) CHECK(logits_of(loaded, tokens) == logits_of(original, tokens));
    }
  }
}

TEST_CASE("gguf models: RoPE base, epsilon and scaling round-trip and drive the pass",
          "[invariant]") {
  const std::vector<int> tokens = {1, 5, 17, 42, 95, 3, 60, 7, 8, 9};
  ModelConfig c = small_block_config(true);
  c.rope_theta = 500000.0f;
  c.norm_eps = 1e-6f;
  c.rope_scaling = RopeScaling::llama3;
  c.rope_factor = 8.0f;
  c.rope_low_freq_factor = 1.0f;
  c.rope_high_freq_factor = 4.0f;
  c.rope_original_context = 16;
  const Model original = make_synthetic_model(c, {}, "llama3-scaled");
  const GgufTemp file("", "llama3");
  original.save_gguf(file.str());
  const Model loaded = Model::load(file.str());
  const ModelConfig& l = loaded.config();
  CHECK(l.rope_theta == 500000.0f);
  CHECK(l.norm_eps == 1e-6f);
  CHECK(l.rope_scaling == RopeScaling::llama3);
  CHECK(l.rope_factor == 8.0f);
  CHECK(l.rope_high_freq_factor == 4.0f);
  CHECK(l.rope_original_context == 16);
  CHECK(logits_of(loaded, tokens) == logits_of(original, tokens));
  // The scaling changes the logits (it is read by the pass, not only stored).
  ModelConfig unscaled = c;
  unscaled.rope_scaling = RopeScaling::none;
  const Model plain = make_synthetic_model(unscaled, {}, "unscaled");
  CHECK(logits_of(plain, tokens) != logits_of(original, tokens));
}

TEST_CASE("rope_inv_freq: the llama2.c rule, linear and Llama 3 scaling", "[unit]") {
  ModelConfig c = small_block_config(true);  // hs = 8: four pairs
  c.rope_theta = 10000.0f;
  const std::vector<float> base = c.rope_inv_freq();
  REQUIRE(base.size() == 4);
  for (int j = 0; j < 4; ++j)
    CHECK(base[std::size_t(j)] == 1.0f / std::pow(10000.0f, float(2 * j) / 8.0f));
  c.rope_scaling = RopeScaling::linear;
  c.rope_factor = 4.0f;
  const std::vector<float> linear = c.rope_inv_freq();
  for (std::size_t j = 0; j < 4; ++j) CHECK(linear[j] == base[j] / 4.0f);
  // Wavelengths 2*pi/inv_freq: 6.3, 63, 628, 6283. With an original context of 100 and
  // factors 1 and 4: below 25 kept, above 100 divided by the factor, 63 blended with
  // smooth = (100/63 - 1) / 3.
  c.rope_scaling = RopeScaling::llama3;
  c.rope_original_context = 100;
  c.rope_low_freq_factor = 1.0f;
  c.rope_high_freq_factor = 4.0f;
  const std::vector<float> l3 = c.rope_inv_freq();
  CHECK(l3[0] == base[0]);
  const float smooth = (100.0f / (2.0f * 3.14159265f / base[1]) - 1.0f) / 3.0f;
  CHECK(l3[1] == Approx((1.0f - smooth) * base[1] / 4.0f + smooth * base[1]).epsilon(1e-5));
  CHECK(l3[2] == base[2] / 4.0f);
  CHECK(l3[3] == base[3] / 4.0f);
}

TEST_CASE("gguf models: bad metadata and tensors are refused with one clear line", "[unit]") {
  const Model original = make_synthetic_model(small_block_config(false), {}, "small");
  const GgufTemp good_file("", "goodmodel");
  original.save_gguf(good_file.str(), TensorType::kQ8_0);
  std::string good;
  {
    std::ifstream in(good_file.path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto refuse = [](const std::string& bytes, const std::string& expected) {
    expect_refused(bytes, expected, [](const std::string& path) { Model::load(path); });
  };
  // A u32 value: after the key, its 4-byte type.
  auto value_at = [&](const std::string& key) { return find_bytes(good, key) + key.size() + 4; };
  std::string b = good;
  const std::size_t arch = value_at("general.architecture") + 8;
  b.replace(arch, 5, "qwen2");
  refuse(b, "architecture 'qwen2' is not supported (supported: llama)");
  b = good;
  b[find_bytes(b, "llama.block_count") + 16] = 'X';
  refuse(b, "metadata key 'llama.block_count' is missing");
  b = good;
  poke<std::uint32_t>(b, value_at("llama.feed_forward_length"), 128);
  refuse(b, "tensor 'blk.0.ffn_gate.weight' is [64, 96] Q8_0, but the metadata implies [64, 128]");
  b = good;
  poke<std::uint32_t>(b, value_at("llama.attention.key_length"), 16);
  // A head width of its own makes the query projection Nh x 16 = 128 wide: the tensor disagrees.
  refuse(b, "tensor 'blk.0.attn_q.weight' is [64, 64] Q8_0, but the metadata implies [64, 128]");
  b = good;
  poke<std::uint32_t>(b, value_at("llama.attention.head_count"), 0);
  refuse(b, "llama.attention.head_count = 0 (must be in [1, 2147483647])");
  b = good;
  b[find_bytes(b, "output_norm.weight") + 17] = 'X';
  refuse(b, "tensor 'output_norm.weight' is missing");
  b = good;
  b[find_bytes(b, "llama.vocab_size") + 16 + 4] = 97;
  refuse(b, "llama.vocab_size = 97 but token_embd.weight has 96 rows");
  // A non-finite weight: the first F32 norm's first value.
  const GgufFile f = GgufFile::open(good_file.str());
  const GgufTensor* norm = f.find_tensor("blk.0.attn_norm.weight");
  b = good;
  poke<float>(b, f.data_offset() + norm->offset, std::nanf(""));
  refuse(b, "tensor 'blk.0.attn_norm.weight' holds nan at index 0: the weights must be finite");
}

TEST_CASE("the model short name smollm2 resolves to its GGUF file", "[unit]") {
  const fs::path dir =
      fs::temp_directory_path() / ("inferlab_short_name_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / kSmolLM2Model).put('x');
  const char* saved = std::getenv("INFERLAB_MODELS");
  const std::string previous = saved ? saved : "";
  ::setenv("INFERLAB_MODELS", dir.c_str(), 1);
  const std::string found = find_model("smollm2");
  if (saved) {
    ::setenv("INFERLAB_MODELS", previous.c_str(), 1);
  } else {
    ::unsetenv("INFERLAB_MODELS");
  }
  fs::remove_all(dir);
  CHECK(found == (dir / kSmolLM2Model).string());
}

TEST_CASE("gguf models: SmolLM2-135M-Instruct loads and answers", "[model]") {
  const std::string path =
      test::require_file(test::models_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf");
  CHECK(fs::path(find_model("smollm2")).filename() == kSmolLM2Model);  // the short name
  const Model m = Model::load(path);
  const ModelConfig& c = m.config();
  CHECK(c.dim == 576);
  CHECK(c.hidden_dim == 1536);
  CHECK(c.n_layers == 30);
  CHECK(c.n_heads == 9);
  CHECK(c.n_kv_heads == 3);
  CHECK(c.head_size() == 64);
  CHECK(c.vocab_size == 49152);
  CHECK(c.seq_len == 8192);
  CHECK(c.rope_theta == 100000.0f);
  CHECK(c.norm_eps == 1e-5f);
  CHECK(c.rope_scaling == RopeScaling::none);
  CHECK(c.shared_classifier);
  CHECK_THAT(m.load_note(), Contains("210 Q4_1 tensors") && Contains("1 Q8_0 tensor") &&
                                Contains("61 F32 tensors") && Contains("tied classifier"));
  // A chat prompt spelled with whole vocabulary pieces (byte-level BPE: 'Ġ' is a space, 'Ċ' a
  // newline); greedy decoding must answer it.
  const GgufFile f = GgufFile::open(path);
  const auto vocab = f.get_array<std::string_view>("tokenizer.ggml.tokens");
  auto id = [&](std::string_view piece) {
    const auto it = std::find(vocab.begin(), vocab.end(), piece);
    REQUIRE(it != vocab.end());
    return int(it - vocab.begin());
  };
  std::vector<int> tokens;
  for (const char* piece :
       {"<|im_start|>", "user", "Ċ", "What", "Ġis", "Ġthe", "Ġcapital", "Ġof", "ĠFrance", "?",
        "<|im_end|>", "Ċ", "<|im_start|>", "ass", "istant", "Ċ"})
    tokens.push_back(id(piece));
  ForwardPass pass(m);
  std::string answer;
  for (int step = 0; step < 8; ++step) {
    const std::vector<float> logits = naive_logits(pass, tokens);
    const int next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    tokens.push_back(next);
    answer += std::string(vocab[std::size_t(next)]);
  }
  CAPTURE(answer);
  CHECK_THAT(answer, Contains("Paris"));
}
