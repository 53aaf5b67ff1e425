// Chapter 06: the prefix cache.
//
// Serves one workload whose requests share prompt prefixes (a system prompt, few-shot examples,
// earlier chat turns, retrieved documents) with no prefix cache, with vLLM-style block hashes
// and with SGLang-style radix trie, on the same paged KV memory. Prints how much prefill each
// cache saved and what that did to time to first token; shows the timing side channel that a
// per-tenant salt closes, the seed's worked number on the roofline, and (--plot) the TTFT
// distributions and the trie.
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/plots.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/prefix_report.hpp"
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/app/serving_cli.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServingFlags serving;
  std::string cache = "all";
  double cache_memory_mib = 0.0;  // 0: room for 4096 positions of the model
  int block_size = 16;
  std::string schedule = "fcfs";
  std::string kv_dtype = "f32";
  std::string plot;
};

constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json summary_json(const PrefixSummary& s) {
  return {{"token_hit_rate", s.token_hit_rate},
          {"request_hit_rate", s.request_hit_rate},
          {"prompt_tokens", s.prompt_tokens},
          {"prefill_tokens_computed", s.prefill_tokens_computed},
          {"prefill_tokens_saved", s.prefill_tokens_saved},
          {"evictions", s.evictions},
          {"ttft_p50", s.ttft_p50},
          {"ttft_p99", s.ttft_p99},
          {"throughput_tokens_per_s", s.throughput_tokens_per_s},
          {"cache_bytes", s.cache_bytes},
          {"steps", s.steps},
          {"mean_running", s.mean_running},
          {"preemptions", s.preemptions}};
}

void print_summaries(const std::vector<PrefixSummary>& s) {
  std::vector<std::string> names;
  for (const PrefixSummary& x : s) names.push_back(x.cache);
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const char* label, auto&& cell) {
    std::vector<std::string> cells;
    for (const PrefixSummary& x : s) cells.push_back(cell(x));
    rows.emplace_back(label, std::move(cells));
  };
  row("token hit rate",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}%", 100 * x.token_hit_rate); });
  row("request hit rate (>= 1 block)",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}%", 100 * x.request_hit_rate); });
  row("prefill tokens computed",
      [](const PrefixSummary& x) { return std::to_string(x.prefill_tokens_computed); });
  row("prefill tokens saved",
      [](const PrefixSummary& x) { return std::to_string(x.prefill_tokens_saved); });
  row("evicted blocks", [](const PrefixSummary& x) { return std::to_string(x.evictions); });
  row("TTFT p50 (ms)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.ttft_p50 * 1e3); });
  row("TTFT p99 (ms)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.ttft_p99 * 1e3); });
  row("throughput (tokens/s)",
      [](const PrefixSummary& x) { return fmt::format("{:.1f}", x.throughput_tokens_per_s); });
  row("steps / mean running / preemptions", [](const PrefixSummary& x) {
    return fmt::format("{}/{:.1f}/{}", x.steps, x.mean_running, x.preemptions);
  });
  row("cache size, peak (MiB)",
      [](const PrefixSummary& x) { return fmt::format("{:.2f}", x.cache_bytes / kMiB); });
  print_columns("prefix cache", names, rows, 36, 14);
}

// Everything one run of the chapter served and measured.
struct Result {
  bool sim = false;                          // --clock sim
  std::string model;                         // the model's name, or the simulated configuration
  std::string workload;                      // the workload's description
  Order order = Order::fcfs;                 // --schedule
  DType kv_type = DType::f32;                // KV storage (cached blocks included)
  std::size_t kv_bytes_budget = 0;           // the paged KV memory
  std::vector<EngineRun> runs;               // one per cache
  std::vector<PrefixSummary> summaries;      // runs[i]'s
  bool same_tokens = true;                   // each request's tokens equal with every cache
  Order other = Order::fcfs;                 // the order the radix cache also ran in
  std::optional<PrefixSummary> other_order;  // the radix cache in that order
  int probe_tokens = 0;                      // the side channel's prefix
  SideChannel open, closed;                  // the side channel without and with a tenant salt
  PrefillSaving seed;                        // the seed's worked number
  std::optional<PrefillSaving> here;         // sim: the same on the simulated machine and model
};

nlohmann::json result_json(const Options& o, const Result& res) {
  nlohmann::json out = {{"chapter", "06_prefix_cache"},
                        {"model", res.model},
                        {"clock", o.serving.clock},
                        {"workload", res.workload},
                        {"schedule", order_name(res.order)},
                        {"kv_dtype", dtype_name(res.kv_type)},
                        {"block_size", o.block_size},
                        {"kv_bytes_budget", res.kv_bytes_budget},
                        {"same_tokens_across_caches", res.same_tokens}};
  if (res.sim) out["hardware"] = o.serving.hardware;
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < res.runs.size(); ++i) {
    names.push_back(res.summaries[i].cache);
    out[res.summaries[i].cache] = {{"requests", requests_json(res.runs[i])},
                                   {"summary", summary_json(res.summaries[i])}};
  }
  out["caches"] = names;
  if (res.other_order)
    out["radix_" + std::string(order_name(res.other))] = {
        {"summary", summary_json(*res.other_order)}};
  out["side_channel"] = {
      {"prefix_tokens", res.probe_tokens},
      {"unsalted",
       {{"ttft_seen_s", res.open.ttft_seen_s}, {"ttft_unseen_s", res.open.ttft_unseen_s}}},
      {"salted",
       {{"ttft_seen_s", res.closed.ttft_seen_s}, {"ttft_unseen_s", res.closed.ttft_unseen_s}}}};
  out["seed_worked_number"] = {{"prefix_tokens", 2000},
                               {"config", "llama3-70b"},
                               {"hardware", "4x a100-sxm"},
                               {"prefill_s", res.seed.prefill_seconds},
                               {"rate_requests_per_s", res.seed.rate},
                               {"gpu_seconds_saved_per_s", res.seed.gpu_seconds_saved_per_second}};
  return out;
}

void print_result(const Options& o, const Result& res) {
  print_summaries(res.summaries);
  const PrefixSummary *off = nullptr, *radix = nullptr;
  for (const PrefixSummary& s : res.summaries) {
    if (s.cache == "off") off = &s;
    if (s.cache == "radix") radix = &s;
  }
  std::printf("\n");
  for (const PrefixSummary& s : res.summaries) {
    if (s.cache == "off" || !off) continue;
    std::printf(
        "%-5s vs no cache: %.0f%% of the prompt tokens never prefilled; TTFT p50 %.2f -> "
        "%.2f ms (%.2fx), p99 %.2f -> %.2f ms; throughput %.2fx\n",
        s.cache.c_str(), 100 * s.token_hit_rate, off->ttft_p50 * 1e3, s.ttft_p50 * 1e3,
        off->ttft_p50 / std::max(s.ttft_p50, 1e-12), off->ttft_p99 * 1e3, s.ttft_p99 * 1e3,
        s.throughput_tokens_per_s / std::max(off->throughput_tokens_per_s, 1e-12));
  }
  if (res.other_order)
    std::printf("scheduling (radix): %s order hits %.1f%% of prompt tokens, %s order %.1f%%\n",
                order_name(res.order), 100 * radix->token_hit_rate, order_name(res.other),
                100 * res.other_order->token_hit_rate);
  if (!res.sim)
    std::printf("each request's tokens with every cache: %s\n",
                res.same_tokens ? "identical (cached keys and values are the ones prefill computes)"
                                : "DIFFERENT (the prefix cache is broken!)");
  std::printf(
      "\nside channel (%d-token prefix; alice sends it, then bob sends it, then bob sends "
      "an unseen one; medians of 5 rounds):\n",
      res.probe_tokens);
  std::printf(
      "  no tenant salt:  bob's TTFT %.3f ms for alice's prefix vs %.3f ms for an unseen "
      "one (%.1fx): bob learns what alice sent\n",
      res.open.ttft_seen_s * 1e3, res.open.ttft_unseen_s * 1e3, res.open.ratio());
  std::printf("  salted by tenant: %.3f ms vs %.3f ms (%.1fx): nothing to learn\n",
              res.closed.ttft_seen_s * 1e3, res.closed.ttft_unseen_s * 1e3, res.closed.ratio());
  std::printf(
      "\nthe seed's worked number (roofline, llama3-70b on 4x A100, 2,000-token system "
      "prompt): %.0f ms of prefill per request;\n  at %.0f requests/s a prefix cache saves "
      "%.1f GPU-seconds every second (the seed says ~400 ms and 40 s)\n",
      res.seed.prefill_seconds * 1e3, res.seed.rate, res.seed.gpu_seconds_saved_per_second);
  if (res.here)
    std::printf("  on %s with %s: %.0f ms per request, %.1f GPU-seconds per second\n",
                o.serving.hardware.c_str(), o.serving.config.c_str(),
                res.here->prefill_seconds * 1e3, res.here->gpu_seconds_saved_per_second);
  if (!o.plot.empty()) std::printf("plot written to %s\n", o.plot.c_str());
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  if (!f.dump_logits.empty()) throw Error("--dump-logits does not apply to this chapter");
  Result res;
  res.sim = sim_clock(o.serving);
  const bool sim = res.sim;
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  f.sampling.validate();
  std::vector<PrefixCacheKind> caches;
  if (o.cache == "all")
    caches = {PrefixCacheKind::off, PrefixCacheKind::hash, PrefixCacheKind::radix};
  else
    caches = {parse_prefix_cache(o.cache)};
  res.order = parse_order(o.schedule);
  const Order order = res.order;
  res.kv_type = parse_kv_dtype(o.kv_dtype);
  const DType kv_type = res.kv_type;

  const Workload w = make_workload(o.serving, f.sampling);
  res.workload = w.description;
  const LoadedModel m = sim ? load_model_or_tokenizer(f) : load_model(f);  // sim needs no weights
  SimEngine sim_engine;
  if (sim) {
    sim_engine = make_sim_engine(o.serving, m);
    sim_engine.kv_type = kv_type;
  }
  res.model = sim ? o.serving.config : m.model->name();
  const ModelConfig& config = sim ? sim_engine.config : m.model->config();
  check_workload_lengths(w, o.serving, *m.tokenizer, config);
  const std::size_t per_token = kv_storage_bytes_per_token(config, kv_type);
  MemoryConfig memory;
  memory.allocator = Allocator::paged;
  memory.block_size = o.block_size;
  memory.budget_bytes =
      o.cache_memory_mib > 0 ? std::size_t(o.cache_memory_mib * kMiB) : per_token * 4096;
  res.kv_bytes_budget = memory.budget_bytes;
  // The budget and block size are checked now, before any work (a manager with no storage).
  make_kv_manager(memory, virtual_pools(config, kv_type), config, kv_type);
  SchedulerConfig sc = scheduler_config(o.serving, Policy::continuous);
  sc.order = order;
  const Device device = parse_device(f.device);

  // One engine, any cache and order: the same requests every time.
  auto serve = [&](const std::vector<Request>& reqs, PrefixCacheKind cache, Order ord) {
    MemoryConfig mem = memory;
    mem.prefix_cache = cache;
    SchedulerConfig s = sc;
    s.order = ord;
    if (sim) {
      SimEngine e = sim_engine;
      e.memory = mem;
      return run_sim(reqs, s, e);
    }
    return run_real(reqs, s, {&*m.model, &*m.tokenizer, kv_type, device, mem});
  };

  if (!f.json) {
    if (sim) {
      std::printf("InferLab chapter 06: the prefix cache (simulated: %s on %s)\n",
                  o.serving.config.c_str(), sim_engine.hardware.description.c_str());
    } else {
      print_run_header("InferLab chapter 06: the prefix cache (real clock)", m, f);
    }
    std::printf("workload:  %s\n", w.description.c_str());
    std::printf(
        "memory:    %.2f MiB of paged %s KV (%zu positions, blocks of %d) shared by running "
        "requests and the cache; scheduling: %s\n",
        memory.budget_bytes / kMiB, dtype_name(kv_type), memory.budget_bytes / per_token,
        o.block_size, order_name(order));
    if (sim) print_sim_memory_fit(sim_engine, memory.budget_bytes);
    std::printf("\n");
  }

  for (PrefixCacheKind c : caches) {
    if (!f.json) std::fprintf(stderr, "[serving with prefix cache %s...]\n", prefix_cache_name(c));
    res.runs.push_back(serve(w.requests, c, order));
  }
  for (const EngineRun& r : res.runs) res.summaries.push_back(prefix_summary(r));
  // The chapter's agreement check: reusing keys and values never changes a token.
  res.same_tokens = same_tokens(res.runs);

  // Cache-aware scheduling: the radix cache under the other order too.
  res.other = order == Order::fcfs ? Order::longest_prefix : Order::fcfs;
  if (std::find(caches.begin(), caches.end(), PrefixCacheKind::radix) != caches.end()) {
    if (!f.json) std::fprintf(stderr, "[radix cache, %s order...]\n", order_name(res.other));
    res.other_order = prefix_summary(serve(w.requests, PrefixCacheKind::radix, res.other));
  }

  // The side channel: a prefix about as long as the context allows (2,000 tokens on the
  // simulated machine, as in the seed).
  res.probe_tokens = std::max(1, std::min(sim ? 2000 : 448, config.seq_len - 16));
  const double spacing = sim ? 1.0 : 0.15;
  auto probe_serve = [&](const std::vector<Request>& reqs) {
    return serve(reqs, PrefixCacheKind::radix, Order::fcfs);
  };
  if (!f.json) std::fprintf(stderr, "[side channel probe...]\n");
  res.open = measure_side_channel(probe_serve, res.probe_tokens, spacing, /*salted=*/false);
  res.closed = measure_side_channel(probe_serve, res.probe_tokens, spacing, /*salted=*/true);
  res.seed = seed_prefill_saving();
  if (sim) res.here = prefill_saving(config, sim_engine.hardware, sim_engine.cost, 2000, 100.0);

  if (!o.plot.empty()) {
    std::vector<const EngineRun*> views;
    for (const EngineRun& r : res.runs) views.push_back(&r);
    const SvgPlot ttft = ttft_cdf_plot(
        views,
        fmt::format("Time to first token with and without a prefix cache: {} ({} clock)",
                    sim ? o.serving.config : title_model_name(m.model->name()), o.serving.clock));
    std::vector<const SvgPlot*> plots = {&ttft};
    std::optional<SvgPlot> trie;
    for (const EngineRun& r : res.runs)
      if (!r.trie.empty())
        trie.emplace(trie_plot(r.trie,
                               "The radix trie at the end of the run (tokens per edge, "
                               "matches through the node)"));
    if (trie) plots.push_back(&*trie);
    save_stacked(o.plot, plots);
  }

  if (f.json)
    std::cout << result_json(o, res).dump(1) << '\n';
  else
    print_result(o, res);
  return res.same_tokens || sim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 06: the prefix cache (radix trie vs block hashes vs none)"};
  Options o;
  add_generation_flags(app, o.gen);
  for (const char* flag : {"--prompt", "--steps"}) app.remove_option(app.get_option(flag));
  o.gen.steps = 0;
  o.serving.workload = "shared-prefix";  // the chapter's point; --workload random shows none
  add_serving_flags(app, o.serving);
  app.add_option("--cache", o.cache, "radix, hash, off, or all (side by side on the same workload)")
      ->check(CLI::IsMember({"radix", "hash", "off", "all"}))
      ->capture_default_str();
  app.add_option("--cache-memory,--kv-memory", o.cache_memory_mib,
                 "paged KV memory in MiB, shared by running requests and the cache (default: "
                 "4096 positions of the model)")
      ->check(finite_in(0.0, 1e9, /*lo_open=*/true));
  app.add_option("--block-size", o.block_size, "positions per KV block")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--schedule", o.schedule, "admission order: fcfs or longest-prefix")
      ->check(CLI::IsMember({"fcfs", "longest-prefix"}))
      ->capture_default_str();
  app.add_option("--kv-dtype", o.kv_dtype, "KV storage type: f32, f16 or int8")
      ->check(CLI::IsMember({"f32", "f16", "int8"}))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG of the TTFT distributions and the trie");
  return run_chapter(app, argc, argv, [&] {
    check_serving_flags(app, o.serving);
    return run(o);
  });
}
