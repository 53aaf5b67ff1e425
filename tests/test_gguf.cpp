// GGUF files: the tensor storage formats, the reader (every bad input refused with one clear
// line), the writer, and the real SmolLM2 file and llama.cpp vocabularies when present.
#include <unistd.h>

#include <cmath>
#include <cstdint>
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
#include "test_support.hpp"

using namespace inferlab;
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

  auto refuse = [&](const std::string& bytes, const std::string& expected) {
    const GgufTemp bad(bytes, "bad");
    CAPTURE(expected);
    try {
      GgufFile::open(bad.str());
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK_THAT(msg, Contains(expected));
      CHECK_THAT(msg, Contains(bad.str()));
      CHECK(msg.find('\n') == std::string::npos);
    }
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
    poke<std::uint32_t>(b, first_type, 14);
    refuse(b,
           "tensor 'first' has type Q6_K, which InferLab does not read (supported: F32, F16, "
           "BF16, Q8_0, Q4_0, Q4_1)");
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
  const fs::path dir = test::models_dir() / ".." / "tokenizers";
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
