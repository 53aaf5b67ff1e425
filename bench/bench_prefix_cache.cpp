// Benchmark for chapter 06: what the prefix cache's own bookkeeping costs per request. Each
// request matches a prompt that shares 3/4 of its tokens with one of 8 cached prompts, then
// inserts it (blocks of 16), for prompts of 100, 1K and 10K tokens; median of --reps rounds of
// 64 requests. Compare with the prefill the match saves (chapter 06 prints it): on any model,
// microseconds of trie walking against milliseconds of forward pass.
// Not a test: nothing is asserted.
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/serving/prefix_report.hpp"

using namespace inferlab;

int main(int argc, char** argv) {
  CLI::App app{
      "Prefix cache benchmark: match + insert cost per request, radix trie vs block hashes"};
  std::vector<int> lengths = {100, 1000, 10000};
  int block_size = 16, reps = 9;
  app.add_option("--lengths", lengths, "prompt lengths, tokens")->check(integer_in(4, 1 << 22));
  app.add_option("--block-size", block_size, "positions per block")
      ->check(integer_in(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--reps", reps, "rounds of 64 requests (the median is printed)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    std::printf(
        "prefix cache operations per request (prompts share 3/4 with a cached one, blocks "
        "of %d, median of %d x 64):\n",
        block_size, reps);
    std::printf("  %8s  %6s  %10s  %11s  %9s\n", "tokens", "cache", "match (us)", "insert (us)",
                "ns/token");
    for (int n : lengths) {
      for (PrefixCacheKind kind : {PrefixCacheKind::radix, PrefixCacheKind::hash}) {
        std::fprintf(stderr, "[%s, %d tokens...]\n", prefix_cache_name(kind), n);
        const CacheOpCost c = measure_cache_ops(kind, n, block_size, reps);
        std::printf("  %8d  %6s  %10.2f  %11.2f  %9.1f\n", n, prefix_cache_name(kind), c.match_us,
                    c.insert_us, (c.match_us + c.insert_us) * 1e3 / n);
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
