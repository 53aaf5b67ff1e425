// Weights kept in a block format (--weights): the format names, a model stored with no float
// copy, the same blocks whether quantized at load or read from a file, and the refusals.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/weight_format.hpp"
#include "inferlab/runtime/forward.hpp"
#include "small_models.hpp"
#include "test_support.hpp"

using namespace inferlab;
using test::TempFile;
using test::logits_of;
using test::small_block_config;
using Catch::Matchers::Contains;
using kernels::TensorType;
namespace fs = std::filesystem;

namespace {

struct Stored {
  WeightFormat format;
  TensorType type;
};
const Stored kStored[] = {{WeightFormat::f16, TensorType::kF16},
                          {WeightFormat::q8_0, TensorType::kQ8_0},
                          {WeightFormat::q4_0, TensorType::kQ4_0},
                          {WeightFormat::q4_1, TensorType::kQ4_1}};

}  // namespace

TEST_CASE("weight formats: names round-trip, an unknown one is refused with the list",
          "[unit][quant]") {
  for (const std::string& name : weight_format_names())
    CHECK(weight_format_name(parse_weight_format(name)) == name);
  CHECK(parse_weight_format("file") == WeightFormat::file);
  CHECK(weight_format_type(WeightFormat::file) == std::nullopt);
  CHECK(weight_format_type(WeightFormat::q4_1) == TensorType::kQ4_1);
  try {
    parse_weight_format("q3_k");
    FAIL("q3_k was accepted");
  } catch (const ParameterError& e) {
    CHECK(e.parameter() == "weights");
    CHECK_THAT(e.problem(), Contains("q3_k: unknown weight format") &&
                                Contains("file, f32, f16, q8_0, q4_0, q4_1, q4_k, q6_k"));
  }
}

TEST_CASE("stored weights: no float copy, the file's blocks, the float model's logits",
          "[unit][quant]") {
  const std::vector<int> tokens = {1, 5, 17, 42, 95, 3, 60};
  for (bool shared : {true, false}) {
    const Model original = make_synthetic_model(small_block_config(shared), {}, "small");
    for (const Stored& s : kStored) {
      CAPTURE(shared, weight_format_name(s.format));
      SyntheticOptions options;
      options.weights = s.format;
      const Model stored = make_synthetic_model(small_block_config(shared), options, "small");
      // Only the norms are float: no float copy of a linear layer or of the embedding.
      CHECK_FALSE(stored.float_weights());
      CHECK(stored.weights().wq == nullptr);
      CHECK(stored.weights().token_embedding == nullptr);
      CHECK(stored.weights().rms_att != nullptr);
      CHECK_THAT(stored.load_note(), Contains(kernels::ggml_type_name(std::uint32_t(s.type))));
      const CpuLinears& linears = stored.cpu_linears();
      REQUIRE(linears.wq.size() == 2);
      CHECK(linears.w2[1].is_stored());
      CHECK(linears.w2[1].stored.type() == s.type);
      CHECK(linears.wcls.stored.type() == s.type);
      // The blocks are quantize_ref's, byte for byte: the ones a GGUF file of that type holds;
      // and that file, kept as stored, holds the same bytes.
      const TempFile file("blocks", ".gguf");
      original.save_gguf(file.str(), s.type);
      const GgufFile gguf = GgufFile::open(file.str());
      const GgufTensor* w2 = gguf.find_tensor("blk.1.ffn_down.weight");
      REQUIRE(w2 != nullptr);
      REQUIRE(w2->n_bytes == linears.w2[1].stored.bytes());
      CHECK(std::memcmp(w2->data, linears.w2[1].stored.row(0), w2->n_bytes) == 0);
      const Model from_file = Model::load(file.str());  // WeightFormat::file: kept as stored
      CHECK_FALSE(from_file.float_weights());
      CHECK_THAT(from_file.load_note(), Contains("kept as the file stores them"));
      REQUIRE(from_file.cpu_linears().w2[1].stored.bytes() == w2->n_bytes);
      CHECK(std::memcmp(from_file.cpu_linears().w2[1].stored.row(0), w2->data, w2->n_bytes) ==
            0);
      // Embedding rows are dequantized on lookup: the rows of the float reference.
      const Model as_float = Model::load(file.str(), LoadOptions{WeightFormat::f32});
      std::vector<float> row(64);
      stored.embedding_row(42, row.data());
      CHECK(std::equal(row.begin(), row.end(), as_float.weights().token_embedding + 42 * 64));
      // The stored model's logits are the float model's (same weights) up to the kernels'
      // rounding: the activations are quantized to 8 bits per block (half a step of error per
      // element), so a loose bound, and the same greedy token.
      const std::vector<float> got = logits_of(stored, tokens);
      const std::vector<float> want = logits_of(as_float, tokens);
      const auto r = test::all_close(got, want, long(want.size()), 2e-2, 2e-2);
      INFO("max |logit difference| " << r.max_abs_err << ", first bad " << r.first_bad);
      CHECK(r.ok);
      CHECK(std::max_element(got.begin(), got.end()) - got.begin() ==
            std::max_element(want.begin(), want.end()) - want.begin());
      CHECK(logits_of(from_file, tokens) == got);
      // A stored model is not written back as floats.
      CHECK_THROWS_WITH(stored.save(file.str() + ".bin"), Contains("block format"));
    }
  }
}

TEST_CASE("stored weights: a decode step reads the blocks as stored", "[unit][quant]") {
  // Bytes per 32 weights: Q8_0 a half scale and 32 bytes, Q4_0 a half scale and 16 bytes of
  // nibbles, Q4_1 a half scale and min and the nibbles; F16 two bytes per weight.
  const std::pair<WeightFormat, double> kBytesPer32[] = {{WeightFormat::f16, 64.0},
                                                         {WeightFormat::q8_0, 34.0},
                                                         {WeightFormat::q4_0, 18.0},
                                                         {WeightFormat::q4_1, 20.0}};
  for (bool shared : {true, false}) {
    const ModelConfig c = small_block_config(shared);
    const Model original = make_synthetic_model(c, {}, "small");
    // These shapes pack without padding: the float model reads its float32 numbers.
    CHECK(original.bytes_read_per_token() == double(c.bytes_read_per_token()));
    // Per layer: wq, wo (D x D), wk, wv (32 x D: 4 KV heads of 8), w1, w2, w3 (H x D); then
    // the classifier (V x D) and one embedding row; the norms stay float32.
    const double matrices = 2.0 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 96 * 64) + 96 * 64 + 64;
    const double norms = (2 * 2 + 1) * 64 * 4.0;
    REQUIRE(double(c.bytes_read_per_token()) == matrices * 4 + norms);
    for (const auto& [format, per32] : kBytesPer32) {
      CAPTURE(shared, weight_format_name(format));
      SyntheticOptions options;
      options.weights = format;
      const Model stored = make_synthetic_model(c, options, "small");
      CHECK(stored.bytes_read_per_token() == Approx(matrices * per32 / 32 + norms));
    }
  }
}

TEST_CASE("stored weights: the refusals, one clear line each", "[unit][quant]") {
  // stories260K's shape: rows of the down projection hold 172 numbers.
  ModelConfig c = small_block_config(true);
  c.hidden_dim = 172;
  SyntheticOptions options;
  options.weights = WeightFormat::q8_0;
  try {
    make_synthetic_model(c, options, "odd");
    FAIL("rows of 172 were stored as Q8_0");
  } catch (const ParameterError& e) {
    CHECK(e.parameter() == "weights");
    CHECK_THAT(e.problem(), Contains("q8_0: tensor 'w2 (layer 0)' has rows of 172 numbers, not "
                                     "a whole number of Q8_0's 32-number blocks"));
  }
  // A Q8_0 block whose scale is NaN: the load names the tensor and the block.
  const Model original = make_synthetic_model(small_block_config(true), {}, "small");
  const TempFile file("nan", ".gguf");
  original.save_gguf(file.str(), TensorType::kQ8_0);
  std::string bytes;
  {
    std::ifstream in(file.path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::size_t at = std::string::npos;
  {
    const GgufFile gguf = GgufFile::open(file.str());
    const GgufTensor* t = gguf.find_tensor("blk.1.attn_k.weight");
    REQUIRE(t != nullptr);
    // The tensor's third block (34 bytes), found in the file by its bytes.
    at = bytes.find(std::string(reinterpret_cast<const char*>(t->data) + 2 * 34, 34));
    REQUIRE(at != std::string::npos);
  }
  const std::uint16_t nan_half = 0x7E00;
  std::memcpy(bytes.data() + at, &nan_half, 2);
  std::ofstream(file.path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  for (WeightFormat w : {WeightFormat::file, WeightFormat::q4_0}) {
    CHECK_THROWS_WITH(Model::load(file.str(), LoadOptions{w}),
                      Contains("tensor 'blk.1.attn_k.weight' holds nan at index 64 (Q8_0 block "
                               "2: its scale or minimum is not finite)"));
  }
  CHECK_THROWS_WITH(Model::load(file.str(), LoadOptions{WeightFormat::f32}),
                    Contains("tensor 'blk.1.attn_k.weight' holds nan at index 64"));
}
