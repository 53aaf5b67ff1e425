// The forward pass against llama2.c's logits, and its two ways of being called.
#include <fstream>
#include <sstream>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/model/model.hpp"
#include "model_cases.hpp"
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
  const std::string reference = test::golden_file("stories260K_logits.txt");
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const auto rows = read_reference_logits(reference, model.config().vocab_size);
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

TEST_CASE("a ragged batch gives every sequence the same bits as running it alone",
          "[invariant][forward][batch]") {
  const test::ModelCases mc = test::model_cases();
  const Model& model = mc.model;
  std::vector<std::vector<int>> seqs;
  for (const auto& c : mc.cases) {
    auto t = c.tokens;
    t.resize(std::min<std::size_t>(t.size(), 40 + 7 * seqs.size()));  // different lengths
    seqs.push_back(t);
  }
  ForwardPass pass(model);
  // Reference: each sequence alone, all positions in one call.
  std::vector<std::vector<float>> alone(seqs.size());
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    KVCache cache(model.config(), int(seqs[s].size()));
    pass.forward(seqs[s], 0, cache, LogitsMode::all, alone[s]);
  }
  // Batched: at every step each unfinished sequence contributes a chunk of 1 to 6 tokens (prompt
  // chunks and single decode tokens interleave), sequences join late and leave early.
  std::mt19937 rng(7);
  std::vector<KVCache> caches;
  for (const auto& s : seqs) caches.emplace_back(model.config(), int(s.size()));
  std::vector<int> done(seqs.size(), 0);
  std::vector<float> logits;
  int steps = 0, entries_checked = 0;
  for (bool any = true; any; ++steps) {
    std::vector<BatchEntry> batch;
    std::vector<std::size_t> who;
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      if (done[s] == int(seqs[s].size()) || (s >= 3 && steps < int(s))) continue;  // late joiners
      const int n = std::min<int>(1 + int(rng() % 6), int(seqs[s].size()) - done[s]);
      batch.push_back({std::span<const int>(seqs[s].data() + done[s], n), done[s], &caches[s]});
      who.push_back(s);
      done[s] += n;
    }
    any = !batch.empty();
    if (!any) break;
    pass.forward_batch(batch, logits);
    REQUIRE(logits.size() == batch.size() * 512);
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const std::size_t s = who[b];
      const std::size_t pos = std::size_t(done[s] - 1);
      INFO("sequence " << s << " position " << pos << " step " << steps);
      REQUIRE(std::memcmp(&logits[b * 512], &alone[s][pos * 512], 512 * sizeof(float)) == 0);
      ++entries_checked;
    }
  }
  CHECK(entries_checked > 30);
  for (std::size_t s = 0; s < seqs.size(); ++s) CHECK(caches[s].length() == int(seqs[s].size()));
}

TEST_CASE("forward_batch rejects a bad batch without touching any cache",
          "[unit][forward][batch]") {
  SyntheticOptions opt;
  opt.seq_len = 16;
  const Model model = make_synthetic_model("stories260K", opt);
  ForwardPass pass(model);
  KVCache a(model.config()), b(model.config());
  const std::vector<int> ok = {1, 2}, bad = {1, 999};
  std::vector<float> logits;
  std::vector<BatchEntry> batch = {{ok, 0, &a}, {bad, 0, &b}};
  REQUIRE_THROWS_WITH(pass.forward_batch(batch, logits), Catch::Contains("token id 999"));
  CHECK(a.length() == 0);
  batch = {{ok, 0, &a}, {ok, 0, &a}};
  REQUIRE_THROWS_WITH(pass.forward_batch(batch, logits), Catch::Contains("share one cache"));
  batch.clear();
  REQUIRE_THROWS_WITH(pass.forward_batch(batch, logits), Catch::Contains("empty batch"));
}
