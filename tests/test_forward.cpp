// The forward pass against llama2.c's logits, and its two ways of being called.
#include <fstream>
#include <sstream>
#include <algorithm>
#include <cmath>
#include <vector>

#include "inferlab/error.hpp"
#include "inferlab/forward.hpp"
#include "inferlab/model.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

struct LogitsRow {
  int pos = 0, token = 0;
  std::vector<float> logits;
};

// Reads the reference file: '#' comment lines, then `pos token logit_0 ... logit_{V-1}`.
std::vector<LogitsRow> read_reference_logits(const std::string& path, int vocab) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<LogitsRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    LogitsRow r;
    ss >> r.pos >> r.token;
    r.logits.resize(vocab);
    for (float& v : r.logits) ss >> v;
    REQUIRE_FALSE(ss.fail());
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

TEST_CASE("forward reproduces llama2.c's logits within 1e-4 at every position",
          "[golden][forward]") {
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const auto rows =
      read_reference_logits(test::golden_file("stories260K_logits.txt"), model.config().vocab_size);
  REQUIRE(rows.size() >= 5);
  std::vector<int> tokens;
  for (const auto& r : rows) tokens.push_back(r.token);
  ForwardPass pass(model);

  SECTION("the naive loop: every prefix re-processed from scratch") {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto logits = naive_logits(pass, std::span<const int>(tokens.data(), i + 1));
      const auto rep = test::all_close(logits, rows[i].logits, long(logits.size()), 1e-4, 0.0);
      INFO("position " << i << ": max abs error " << rep.max_abs_err);
      REQUIRE(rep.ok);
    }
  }
  SECTION("one call over the whole sequence (all rows)") {
    KVCache cache(model.config());
    std::vector<float> logits;
    pass.forward(tokens, 0, cache, LogitsMode::all, logits);
    REQUIRE(logits.size() == rows.size() * 512);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto rep = test::all_close(logits.data() + i * 512, rows[i].logits, 512, 1e-4, 0.0);
      INFO("position " << i << ": max abs error " << rep.max_abs_err);
      REQUIRE(rep.ok);
    }
  }
  SECTION("token by token through a cache (the decode shape)") {
    KVCache cache(model.config());
    std::vector<float> logits;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      pass.forward(std::span<const int>(&tokens[i], 1), int(i), cache, LogitsMode::last, logits);
      const auto rep = test::all_close(logits, rows[i].logits, 512, 1e-4, 0.0);
      INFO("position " << i << ": max abs error " << rep.max_abs_err);
      REQUIRE(rep.ok);
    }
    CHECK(cache.length() == int(rows.size()));
  }
}

TEST_CASE("forward rejects bad calls with clear errors", "[unit][forward]") {
  SyntheticOptions opt;
  opt.seq_len = 16;
  const Model model = make_synthetic_model("stories260K", opt);
  ForwardPass pass(model);
  KVCache cache(model.config());
  std::vector<float> logits;
  const std::vector<int> none, bad = {1, 512}, neg = {-1};
  REQUIRE_THROWS_WITH(pass.forward(none, 0, cache, LogitsMode::last, logits),
                      Catch::Contains("no tokens"));
  REQUIRE_THROWS_WITH(pass.forward(bad, 0, cache, LogitsMode::last, logits),
                      Catch::Contains("token id 512"));
  REQUIRE_THROWS_WITH(pass.forward(neg, 0, cache, LogitsMode::last, logits),
                      Catch::Contains("token id -1"));
  const std::vector<int> one = {1};
  REQUIRE_THROWS_WITH(pass.forward(one, 3, cache, LogitsMode::last, logits),
                      Catch::Contains("start_pos is 3"));
  const std::vector<int> long_seq(17, 5);
  REQUIRE_THROWS_WITH(pass.forward(long_seq, 0, cache, LogitsMode::last, logits),
                      Catch::Contains("exceed the context of 16"));
  REQUIRE_THROWS_AS(naive_logits(pass, long_seq), Error);
  CHECK(cache.length() == 0);  // nothing was written by the failed calls
}

TEST_CASE("a synthetic model of a larger shape runs and gives finite, varied logits",
          "[unit][forward]") {
  SyntheticOptions opt;
  opt.max_layers = 2;
  opt.seq_len = 32;
  const Model model = make_synthetic_model("stories15M", opt);
  ForwardPass pass(model);
  const std::vector<int> tokens = {1, 100, 2000, 31999};
  const auto logits = naive_logits(pass, tokens);
  REQUIRE(logits.size() == 32000);
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    REQUIRE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(hi - lo > 0.1f);
}
