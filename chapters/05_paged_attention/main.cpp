// Chapter 05: PagedAttention.
//
// Serves one workload twice on the same KV memory budget: once with contiguous reservations
// (each request reserves prompt + max_tokens positions at admission, as engines did before
// paging) and once with paged blocks (a block is taken only when a sequence's last block is
// full). Prints how much reserved memory sat unused, how many sequences fit at once and what
// that did to throughput; --plot draws memory over time and the block tables.
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
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/app/serving_cli.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServingFlags serving;
  std::string allocator = "both";
  std::string reserve = "max-tokens";
  int block_size = 16;
  double kv_memory_mib = 0.0;  // 0: room for 2048 positions of the model
  std::string preempt = "recompute";
  double swap_memory_mib = 64.0;
  int n = 1;
  std::string plot;
  bool sweep_block_size = false;
  std::string kv_dtype = "f32";
};

constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json summary_json(const MemorySummary& s, const EngineRun& run, const Slo& slo) {
  const ServingMetrics m = run_serving_metrics(run, slo);
  nlohmann::json j = {{"kv_bytes_budget", s.kv_bytes_budget},
                      {"peak_kv_bytes_used", s.peak_kv_bytes_used},
                      {"peak_kv_bytes_reserved", s.peak_kv_bytes_reserved},
                      {"waste_fraction", s.waste_fraction},
                      {"max_concurrent_sequences", s.max_concurrent_sequences},
                      {"preemptions", s.preemptions},
                      {"swapped_bytes", s.swapped_bytes},
                      {"throughput_tokens_per_s", s.throughput_tokens_per_s},
                      {"block_size", s.block_size},
                      {"blocks_total", s.blocks_total},
                      {"duration_s", m.duration},
                      {"ttft_p50_s", m.ttft.p50},
                      {"ttft_p99_s", m.ttft.p99}};
  j["bytes_saved_by_sharing"] = s.peak_bytes_saved_by_sharing;
  return j;
}

void print_summaries(const std::vector<MemorySummary>& s) {
  std::vector<std::string> names;
  for (const MemorySummary& x : s) names.push_back(x.allocator);
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const char* label, auto&& cell) {
    std::vector<std::string> cells;
    for (const MemorySummary& x : s) cells.push_back(cell(x));
    rows.emplace_back(label, std::move(cells));
  };
  row("KV budget (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.kv_bytes_budget / kMiB); });
  row("peak reserved (MiB)", [](const MemorySummary& x) {
    return fmt::format("{:.2f}", x.peak_kv_bytes_reserved / kMiB);
  });
  row("peak used (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.peak_kv_bytes_used / kMiB); });
  row("waste: reserved but unused (time avg)",
      [](const MemorySummary& x) { return fmt::format("{:.1f}%", 100 * x.waste_fraction); });
  row("max concurrent sequences",
      [](const MemorySummary& x) { return std::to_string(x.max_concurrent_sequences); });
  row("preemptions", [](const MemorySummary& x) { return std::to_string(x.preemptions); });
  row("swapped (MiB)",
      [](const MemorySummary& x) { return fmt::format("{:.2f}", x.swapped_bytes / kMiB); });
  row("throughput (tokens/s)",
      [](const MemorySummary& x) { return fmt::format("{:.1f}", x.throughput_tokens_per_s); });
  row("saved by sharing, peak (MiB)", [](const MemorySummary& x) {
    return fmt::format("{:.2f}", x.peak_bytes_saved_by_sharing / kMiB);
  });
  print_columns("", names, rows, 40, 18);
}

// Everything one run of the chapter served and measured.
struct Result {
  bool sim = false;                           // --clock sim
  std::string model;                          // the model's name, or the simulated configuration
  std::string workload;                       // the workload's description
  DType kv_type = DType::f32;                 // KV storage
  Preempt preempt = Preempt::recompute;       // what happens when memory runs out
  std::vector<EngineRun> runs;                // one per allocator
  std::vector<MemorySummary> summaries;       // runs[i]'s
  bool same_tokens = true;                    // each request's tokens equal under every allocator
  std::optional<BlockSizeSweep> block_sweep;  // --sweep-block-size
  std::vector<SwapVsRecompute> swap_table;    // sim: swap vs recompute by sequence length
};

nlohmann::json result_json(const Options& o, const Result& res) {
  nlohmann::json out = {{"chapter", "05_paged_attention"},
                        {"model", res.model},
                        {"clock", o.serving.clock},
                        {"workload", res.workload},
                        {"n", o.n},
                        {"kv_dtype", dtype_name(res.kv_type)},
                        {"preempt", preempt_name(res.preempt)},
                        {"same_tokens_across_allocators", res.same_tokens}};
  const Slo slo{};
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < res.runs.size(); ++i) {
    names.push_back(res.runs[i].allocator);
    out[res.runs[i].allocator] = {{"requests", requests_json(res.runs[i])},
                                  {"summary", summary_json(res.summaries[i], res.runs[i], slo)}};
  }
  out["allocators"] = names;
  return out;
}

void print_result(const Options& o, const Result& res) {
  print_summaries(res.summaries);
  if (res.summaries.size() == 2) {
    const MemorySummary &c = res.summaries[0], &p = res.summaries[1];
    std::printf(
        "\npaged vs contiguous on the same budget: waste %.1f%% vs %.1f%%, %d vs %d "
        "sequences at once (%.1fx), %.2fx the throughput\n",
        100 * p.waste_fraction, 100 * c.waste_fraction, p.max_concurrent_sequences,
        c.max_concurrent_sequences,
        double(p.max_concurrent_sequences) / std::max(c.max_concurrent_sequences, 1),
        p.throughput_tokens_per_s / std::max(c.throughput_tokens_per_s, 1e-12));
  }
  if (!res.sim)
    std::printf("each request's tokens under every allocator: %s\n",
                res.same_tokens ? "identical (paging moves the keys, never changes them)"
                                : "DIFFERENT (paged attention is broken!)");
  if (!o.plot.empty()) std::printf("plot written to %s\n", o.plot.c_str());

  if (res.block_sweep) {
    const BlockSizeSweep& b = *res.block_sweep;
    std::printf(
        "\nblock size sweep (paged, same workload and budget; attention: one layer, %d "
        "sequences x %d positions, median of %d):\n",
        b.sequences, b.context, b.reps);
    std::printf("  %6s  %8s  %10s  %14s  %16s\n", "block", "waste", "max seqs", "attention (us)",
                "vs contiguous");
    for (const BlockSizeRow& r : b.rows)
      std::printf("  %6d  %7.1f%%  %10d  %14.1f  %15.2fx\n", r.block_size, 100 * r.waste_fraction,
                  r.max_concurrent_sequences, r.attention_seconds * 1e6, r.vs_contiguous);
  }
  if (res.sim) {
    std::printf("\nswap vs recompute for one preempted sequence (%s on %s, host link 50 GB/s):\n",
                o.serving.config.c_str(), o.serving.hardware.c_str());
    std::printf("  %8s  %12s  %15s  %s\n", "tokens", "swap (ms)", "recompute (ms)", "cheaper");
    for (const SwapVsRecompute& x : res.swap_table)
      std::printf("  %8ld  %12.2f  %15.2f  %s\n", x.tokens, x.swap_seconds * 1e3,
                  x.recompute_seconds * 1e3,
                  x.swap_seconds < x.recompute_seconds ? "swap" : "recompute");
  }
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  if (!f.dump_logits.empty()) throw Error("--dump-logits does not apply to this chapter");
  Result res;
  res.sim = sim_clock(o.serving);
  const bool sim = res.sim;
  const LoadedModel m = sim ? load_model_or_tokenizer(f) : load_model(f);  // sim needs no weights
  std::vector<Allocator> allocators;
  if (o.allocator == "both")
    allocators = {Allocator::contiguous, Allocator::paged};
  else
    allocators = {parse_allocator(o.allocator)};
  res.preempt = parse_preempt(o.preempt);
  res.kv_type = parse_kv_dtype(o.kv_dtype);
  const DType kv_type = res.kv_type;
  const Workload w = make_workload(o.serving, f.sampling);
  res.workload = w.description;
  std::vector<Request> requests = w.requests;
  for (Request& r : requests) r.n = o.n;

  SimEngine sim_engine;
  if (sim) {
    sim_engine = make_sim_engine(o.serving, m);
    sim_engine.kv_type = kv_type;
  }
  res.model = sim ? o.serving.config : m.model->name();
  const ModelConfig& config = sim ? sim_engine.config : m.model->config();
  const std::size_t per_token = kv_storage_bytes_per_token(config, kv_type);
  MemoryConfig memory;
  memory.block_size = o.block_size;
  memory.reserve = o.reserve == "context" ? Reserve::context : Reserve::max_tokens;
  memory.budget_bytes =
      o.kv_memory_mib > 0 ? std::size_t(o.kv_memory_mib * kMiB) : per_token * 2048;
  memory.swap_bytes = res.preempt == Preempt::swap ? std::size_t(o.swap_memory_mib * kMiB) : 0;
  SchedulerConfig sc = scheduler_config(o.serving, Policy::continuous);
  sc.preempt = res.preempt;
  // One engine, any memory: the same requests every time.
  auto serve = [&](const MemoryConfig& mem) {
    if (sim) {
      SimEngine e = sim_engine;
      e.memory = mem;
      return run_sim(requests, sc, e);
    }
    return run_real(requests, sc, {&*m.model, &*m.tokenizer, kv_type, parse_device(f.device), mem});
  };

  if (!f.json) {
    if (sim) {
      std::printf("InferLab chapter 05: PagedAttention (simulated: %s on %s)\n",
                  o.serving.config.c_str(), sim_engine.hardware.description.c_str());
    } else {
      print_run_header("InferLab chapter 05: PagedAttention (real clock)", m, f);
    }
    std::printf("workload:  %s%s\n", w.description.c_str(),
                o.n > 1 ? fmt::format(", {} parallel samples each", o.n).c_str() : "");
    std::printf(
        "memory:    %.2f MiB of KV (%zu bytes per position in %s = %zu positions); "
        "blocks of %d; contiguous reserves %s; preemption: %s\n",
        memory.budget_bytes / kMiB, per_token, dtype_name(kv_type), memory.budget_bytes / per_token,
        o.block_size, o.reserve == "context" ? "the whole context" : "prompt + max_tokens",
        preempt_name(res.preempt));
    if (sim) print_sim_memory_fit(sim_engine, memory.budget_bytes);
    std::printf("\n");
  }

  for (Allocator a : allocators) {
    memory.allocator = a;
    if (!f.json) std::fprintf(stderr, "[serving with %s KV memory...]\n", allocator_name(a));
    res.runs.push_back(serve(memory));
  }
  std::vector<const EngineRun*> views;
  for (const EngineRun& r : res.runs) {
    res.summaries.push_back(memory_summary(r));
    views.push_back(&r);
  }
  // The chapter's agreement check: paging changes where keys and values live, never a token.
  res.same_tokens = same_tokens(res.runs);

  if (!o.plot.empty()) {
    const SvgPlot mem = kv_memory_plot(
        views,
        fmt::format("KV memory over time: {} ({} clock)",
                    sim ? o.serving.config : title_model_name(m.model->name()), o.serving.clock));
    std::vector<const SvgPlot*> plots = {&mem};
    std::optional<SvgPlot> tables;
    for (const EngineRun& r : res.runs)
      if (r.block_size > 0 && !r.peak_tables.tables.empty())
        tables.emplace(block_table_plot(r.peak_tables, r.block_size));
    if (tables) plots.push_back(&*tables);
    save_stacked(o.plot, plots);
  }

  if (f.json) {
    std::cout << result_json(o, res).dump(1) << '\n';
    return res.same_tokens || sim ? 0 : 1;
  }
  // Waste from the engine on the same workload; attention time from one layer of this model.
  if (o.sweep_block_size) {
    std::fprintf(stderr, "[block size sweep...]\n");
    res.block_sweep = block_size_sweep(serve, memory, config);
  }
  if (sim)
    res.swap_table = swap_vs_recompute_table(config, sim_engine.hardware, sim_engine.cost, 50e9);
  print_result(o, res);
  return res.same_tokens || sim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 05: PagedAttention (contiguous vs paged KV memory)"};
  Options o;
  add_generation_flags(app, o.gen);
  // Clients ask for a generous max_tokens and stop earlier: the engine cannot know when, so a
  // contiguous reservation must cover max_tokens.
  o.serving.max_tokens = 400;
  add_serving_flags(app, o.serving);
  app.add_option("--allocator", o.allocator, "paged, contiguous or both (side by side)")
      ->check(CLI::IsMember({"paged", "contiguous", "both"}))
      ->capture_default_str();
  app.add_option("--block-size", o.block_size, "positions per KV block (paged)")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--kv-memory", o.kv_memory_mib,
                 "KV memory budget in MiB, shared by all sequences (default: 2048 positions)")
      ->check(finite_in(1e-6, 1e9));
  app.add_option("--reserve", o.reserve,
                 "contiguous: reserve prompt + max_tokens (max-tokens) or the whole context")
      ->check(CLI::IsMember({"max-tokens", "context"}))
      ->capture_default_str();
  app.add_option("--preempt", o.preempt, "when memory runs out: recompute or swap")
      ->check(CLI::IsMember({"recompute", "swap"}))
      ->capture_default_str();
  app.add_option("--swap-memory", o.swap_memory_mib, "host swap area in MiB (--preempt swap)")
      ->check(finite_in(0.0, 1e9))
      ->capture_default_str();
  app.add_option("--n", o.n, "parallel samples per request (forked after the prompt)")
      ->check(integer_in(1, 256))
      ->capture_default_str();
  app.add_option("--kv-dtype", o.kv_dtype, "KV storage type: f32, f16 or int8")
      ->check(CLI::IsMember({"f32", "f16", "int8"}))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG of KV memory over time and the block tables");
  app.add_flag("--sweep-block-size", o.sweep_block_size,
               "waste and attention time per step for block sizes 1..128");
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
