// Model loading, validation of bad files, synthetic models.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "test_support.hpp"

using namespace inferlab;
using test::TempFile;
namespace fs = std::filesystem;

namespace {

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void set_header_field(std::vector<char>& bytes, int field, std::int32_t value) {
  std::memcpy(bytes.data() + 4 * field, &value, 4);
}

// Resident kB of the mapping that contains address p, from /proc/self/smaps; -1 if not found.
long resident_kb_of_mapping(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<unsigned long>(p);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    long kb = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      inside = a >= lo && a < hi;
    } else if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) {
      return kb;
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("stories260K loads with the documented configuration", "[unit][model]") {
  const Model m = Model::load(test::model_file("stories260K.bin"));
  const ModelConfig& c = m.config();
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.vocab_size == 512);
  CHECK(c.seq_len == 512);
  CHECK(c.shared_classifier);
  CHECK(c.head_size() == 8);
  CHECK(c.kv_dim() == 32);
  CHECK(Model::file_size_for(c) == 1056540);
  CHECK(m.weights().wcls == m.weights().token_embedding);
  // 260K parameters: the name is honest (the legacy RoPE tables are not counted).
  CHECK(c.n_params() == 260032);
}

TEST_CASE("bad model files give one clear error naming the file and the problem", "[unit][model]") {
  const std::vector<char> good = read_all(test::model_file("stories260K.bin"));
  REQUIRE(good.size() == 1056540);
  TempFile f("model");

  SECTION("missing") {
    REQUIRE_THROWS_WITH(Model::load((f.path.string() + ".nope")),
                        Catch::Contains("cannot load model") && Catch::Contains("not found"));
  }
  SECTION("shorter than the header") {
    f.write(std::vector<char>(good.begin(), good.begin() + 10));
    REQUIRE_THROWS_WITH(Model::load(f.path.string()),
                        Catch::Contains(f.path.string()) && Catch::Contains("28-byte header"));
  }
  SECTION("truncated") {
    f.write(std::vector<char>(good.begin(), good.end() - 4));
    REQUIRE_THROWS_WITH(Model::load(f.path.string()), Catch::Contains("1056536 bytes") &&
                                                          Catch::Contains("1056540") &&
                                                          Catch::Contains("truncated"));
  }
  SECTION("padded") {
    std::vector<char> bytes = good;
    bytes.resize(bytes.size() + 8);
    f.write(bytes);
    REQUIRE_THROWS_WITH(Model::load(f.path.string()), Catch::Contains("padded"));
  }
  SECTION("zero or negative dimensions") {
    const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads"};
    for (int field = 0; field < 5; ++field) {
      for (std::int32_t bad : {0, -3}) {
        std::vector<char> bytes = good;
        set_header_field(bytes, field, bad);
        f.write(bytes);
        REQUIRE_THROWS_WITH(Model::load(f.path.string()),
                            Catch::Contains(names[field]) && Catch::Contains("must be positive"));
      }
    }
    std::vector<char> bytes = good;
    set_header_field(bytes, 6, 0);  // seq_len
    f.write(bytes);
    REQUIRE_THROWS_WITH(Model::load(f.path.string()), Catch::Contains("seq_len = 0"));
    set_header_field(bytes, 6, 512);
    set_header_field(bytes, 5, 0);  // vocab_size
    f.write(bytes);
    REQUIRE_THROWS_WITH(Model::load(f.path.string()), Catch::Contains("vocab_size = 0"));
  }
  SECTION("heads that do not divide") {
    std::vector<char> bytes = good;
    set_header_field(bytes, 3, 7);  // n_heads: 64 % 7 != 0
    f.write(bytes);
    REQUIRE_THROWS_WITH(Model::load(f.path.string()), Catch::Contains("not divisible by n_heads"));
    set_header_field(bytes, 3, 8);
    set_header_field(bytes, 4, 3);  // n_kv_heads: 8 % 3 != 0
    f.write(bytes);
    REQUIRE_THROWS_WITH(Model::load(f.path.string()),
                        Catch::Contains("not divisible by n_kv_heads"));
  }
  SECTION("absurd sizes are rejected without allocating") {
    std::vector<char> bytes(good.begin(), good.begin() + 28);
    set_header_field(bytes, 0, 1 << 30);
    set_header_field(bytes, 3, 1);
    set_header_field(bytes, 4, 1);
    f.write(bytes);
    REQUIRE_THROWS_AS(Model::load(f.path.string()), Error);
  }
  SECTION("a directory") {
    REQUIRE_THROWS_WITH(Model::load(fs::temp_directory_path().string()),
                        Catch::Contains("not a regular file"));
  }
}

TEST_CASE("synthetic models are deterministic and round-trip through the file format",
          "[unit][model]") {
  SyntheticOptions opt;
  opt.seed = 7;
  const Model a = make_synthetic_model("stories260K", opt);
  const Model b = make_synthetic_model("stories260K", opt);
  opt.seed = 8;
  const Model other = make_synthetic_model("stories260K", opt);
  const std::size_t n = a.config().n_params();
  CHECK(std::equal(a.weights().token_embedding, a.weights().token_embedding + n,
                   b.weights().token_embedding));
  CHECK_FALSE(std::equal(a.weights().wq, a.weights().wq + 64, other.weights().wq));
  // Linear weights stay within +-1/sqrt(fan_in).
  const float bound = 1.0f / std::sqrt(64.0f);
  const float* wq = a.weights().wq;
  CHECK(*std::max_element(wq, wq + 64 * 64) <= bound);
  CHECK(*std::min_element(wq, wq + 64 * 64) >= -bound);

  TempFile f("synthetic");
  a.save(f.path.string());
  CHECK(fs::file_size(f.path) == Model::file_size_for(a.config()));
  const Model back = Model::load(f.path.string());
  CHECK(back.config().dim == 64);
  CHECK(std::equal(a.weights().token_embedding, a.weights().token_embedding + n,
                   back.weights().token_embedding));
}

TEST_CASE("a model file's linear weights leave resident memory once packed for the CPU",
          "[unit][model]") {
  const ModelConfig c{.dim = 256,
                      .hidden_dim = 768,
                      .n_layers = 2,
                      .n_heads = 8,
                      .n_kv_heads = 4,
                      .vocab_size = 1024,
                      .seq_len = 64,
                      .shared_classifier = false,
                      .rope_freq_factors = {}};
  const Model made = make_synthetic_model(c, SyntheticOptions{}, "release-test");
  TempFile f("release");
  made.save(f.path.string());
  const Model m = Model::load(f.path.string());
  const long file_kb = long(fs::file_size(f.path) / 1024);
  const long before = resident_kb_of_mapping(m.weights().wq);
  if (before < 0) {
    WARN("/proc/self/smaps does not list the model's mapping here: the resident check is skipped");
    return;
  }
  // Loading reads every weight (the finiteness check), so the whole file is resident.
  CHECK(before >= file_kb * 9 / 10);
  const CpuLinears& packed = m.cpu_linears();
  const std::size_t D = c.dim, H = c.hidden_dim, KV = c.kv_dim(), L = c.n_layers;
  const std::size_t linear_floats = L * (2 * D * D + 2 * KV * D + 3 * H * D) + c.vocab_size * D;
  const long linear_kb = long(linear_floats * sizeof(float) / 1024);
  CHECK(packed.bytes() >= linear_floats * sizeof(float));
  // What may stay: the embedding table, the norms, and at most two partial pages per matrix.
  // (Linux may give back more: where the file is mapped with large folios, it unmaps whole
  // folios, and the pages still in use fault back in from the file, the same bytes.)
  const long after = resident_kb_of_mapping(m.weights().wq);
  const long page_kb = ::sysconf(_SC_PAGESIZE) / 1024;
  INFO("file " << file_kb << " kB, linear " << linear_kb << " kB, resident before " << before
               << " kB, after " << after << " kB");
  CHECK(after <= file_kb - linear_kb + 2 * page_kb * long(7 * L + 1));
  // The file's layout still reads back the same bytes (faulted in from the file again).
  CHECK(std::equal(m.weights().wq, m.weights().wq + L * D * D, made.weights().wq));
  CHECK(std::equal(m.weights().wcls, m.weights().wcls + c.vocab_size * D, made.weights().wcls));
  // An owned model keeps its weights: nothing may be given back from memory the model owns.
  const Model owned = make_synthetic_model(c, SyntheticOptions{}, "owned");
  owned.cpu_linears();
  CHECK(std::equal(owned.weights().w2, owned.weights().w2 + L * D * H, made.weights().w2));
}

TEST_CASE("named shapes and layer truncation", "[unit][model]") {
  const ModelConfig c = named_config("llama3-8b");
  CHECK(c.n_kv_heads == 8);
  CHECK(c.vocab_size == 128256);
  CHECK_FALSE(c.shared_classifier);
  CHECK(c.rope_theta == 500000.0f);
  REQUIRE_THROWS_WITH(named_config("gpt5"), Catch::Contains("stories110M"));
  SyntheticOptions opt;
  opt.max_layers = 2;
  const Model m = make_synthetic_model("stories15M", opt);
  CHECK(m.config().n_layers == 2);
  CHECK(m.name().find("layers=2") != std::string::npos);
  // A separate classifier is stored after the RoPE tables and round-trips with vocab < 0.
  ModelConfig small = named_config("stories260K");
  small.shared_classifier = false;
  const Model sep = make_synthetic_model(small, {}, "unshared");
  CHECK(sep.weights().wcls != sep.weights().token_embedding);
  TempFile f("unshared");
  sep.save(f.path.string());
  const Model back = Model::load(f.path.string());
  CHECK_FALSE(back.config().shared_classifier);
  CHECK(std::equal(sep.weights().wcls, sep.weights().wcls + 512 * 64, back.weights().wcls));
}
