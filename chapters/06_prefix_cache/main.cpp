// Chapter 06: the prefix cache.
//
// Serves one workload whose requests share prompt prefixes (a system prompt, few-shot examples,
// earlier chat turns, retrieved documents) with no prefix cache, with vLLM-style block hashes
// and with SGLang-style radix trie, on the same paged KV memory. Prints how much prefill each
// cache saved and what that did to time to first token; shows the timing side channel that a
// per-tenant salt closes, the worked example on the roofline (a 2,000-token system prompt of
// Llama-3-70B on 4x A100), and (--plot) the TTFT distributions and the trie. The study is
// run_prefix_study() (serving/prefix_report.hpp); this file builds the engine and prints.
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/app/prefix_json.hpp"
#include "inferlab/app/prefix_print.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/prefix_report.hpp"

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
  int reps = 3;  // real clock: runs of the whole study; the tables print their medians
};

constexpr double kMiB = 1024.0 * 1024.0;

// What the chapter ran with, beside the study itself.
struct Result {
  bool sim = false;                   // --clock sim
  std::string model;                  // the model's name, or the simulated configuration
  std::string workload;               // the workload's description
  DType kv_type = DType::f32;         // KV storage (cached blocks included)
  std::size_t kv_bytes_budget = 0;    // the paged KV memory
  PrefixStudy study;                  // the caches side by side, the side channel, the example
  PrefixStudyRepeats repeats;         // the real clock's runs behind study's timed numbers
  std::optional<PrefillSaving> here;  // sim: the example on the simulated machine and model
};

nlohmann::json result_json(const Options& o, const Result& res) {
  nlohmann::json out = to_json(res.study);
  out["chapter"] = "06_prefix_cache";
  out["model"] = res.model;
  out["clock"] = o.serving.clock;
  out["workload"] = res.workload;
  out["kv_dtype"] = dtype_name(res.kv_type);
  out["block_size"] = o.block_size;
  out["kv_bytes_budget"] = res.kv_bytes_budget;
  if (res.sim) out["hardware"] = o.serving.hardware;
  return out;
}

void print_result(const Options& o, const Result& res) {
  print_prefix_study(res.study, res.sim, res.repeats);
  if (res.here)
    std::printf("  on %s with %s: %.0f ms per request, %.1f GPU-seconds per second\n",
                o.serving.hardware.c_str(), o.serving.config.c_str(),
                res.here->prefill_seconds * 1e3, res.here->gpu_seconds_saved_per_second);
  if (!o.plot.empty()) std::printf("plot written to %s\n", o.plot.c_str());
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  Result res;
  res.sim = sim_clock(o.serving);
  const bool sim = res.sim;
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  f.sampling.validate();
  PrefixStudyPlan plan;
  if (o.cache == "all")
    plan.caches = {PrefixCacheKind::off, PrefixCacheKind::hash, PrefixCacheKind::radix};
  else
    plan.caches = {parse_prefix_cache(o.cache)};
  plan.order = parse_order(o.schedule);
  res.kv_type = parse_kv_dtype(o.kv_dtype);
  const DType kv_type = res.kv_type;

  Workload w = make_workload(o.serving, f.sampling);
  res.workload = w.description;
  const ServedModel m(o.serving, f, kv_type);
  res.model = m.name(o.serving);
  const ModelConfig& config = m.config();
  check_workload_lengths(w, o.serving, *m.loaded.tokenizer, config);
  const std::size_t per_token = kv_storage_bytes_per_token(config, kv_type);
  MemoryConfig memory;
  memory.allocator = Allocator::paged;
  memory.block_size = o.block_size;
  memory.budget_bytes =
      o.cache_memory_mib > 0 ? std::size_t(o.cache_memory_mib * kMiB) : per_token * 4096;
  res.kv_bytes_budget = memory.budget_bytes;
  // The budget, the block size and every request (a chat turn with the conversation before it)
  // are checked now, before any work.
  require_kv_budget(memory.budget_bytes, sim ? &*m.engine.sim : nullptr, "--cache-memory");
  check_workload_fits(w.requests, memory, config, kv_type, &*m.loaded.tokenizer);
  const SchedulerConfig sc = scheduler_config(o.serving, Policy::continuous);

  // One engine, any cache and order: the same requests every time.
  auto serve = [&](const std::vector<Request>& reqs, PrefixCacheKind cache, Order order) {
    MemoryConfig mem = memory;
    mem.prefix_cache = cache;
    SchedulerConfig s = sc;
    s.order = order;
    return m.engine.serve(reqs, s, mem);
  };

  if (!f.json) {
    print_serving_title("InferLab chapter 06: the prefix cache", m, f, o.serving);
    std::printf("workload:  %s\n", w.description.c_str());
    std::printf(
        "memory:    %.2f MiB of paged %s KV (%zu positions, blocks of %d) shared by running "
        "requests and the cache; scheduling: %s\n",
        memory.budget_bytes / kMiB, dtype_name(kv_type), memory.budget_bytes / per_token,
        o.block_size, order_name(plan.order));
    if (sim) print_sim_memory_fit(*m.engine.sim, memory.budget_bytes);
    std::printf("\n");
  }

  plan.requests = std::move(w.requests);
  plan.simulated = sim;
  plan.context = config.seq_len;
  if (!f.json)
    plan.progress = [](const std::string& line) {
      std::fprintf(stderr, "[%s...]\n", line.c_str());
    };
  // The simulated clock is deterministic: one run. On the real clock the tables print medians
  // of o.reps runs, and a comparison the runs disagree on is reported as noise.
  std::vector<PrefixStudy> studies;
  for (int rep = 0; rep < (sim ? 1 : o.reps); ++rep)
    studies.push_back(run_prefix_study(plan, serve));
  res.study = median_study(studies, res.repeats);
  if (sim)
    res.here = prefill_saving(config, m.engine.sim->hardware, m.engine.sim->cost, 2000, 100.0);
  if (!o.plot.empty())
    save_prefix_plots(
        o.plot, res.study.runs,
        fmt::format("Time to first token with and without a prefix cache: {} ({} clock)",
                    m.plot_name(o.serving), o.serving.clock));

  if (f.json)
    std::cout << result_json(o, res).dump(1) << '\n';
  else
    print_result(o, res);
  return res.study.same_tokens || sim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 06: the prefix cache (radix trie vs block hashes vs none)"};
  Options o;
  add_generation_flags(app, o.gen);
  remove_prompt_flags(app);
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
  app.add_option("--reps", o.reps, "real clock: runs of the whole study (tables print medians)")
      ->check(integer_in(1, 100))
      ->capture_default_str();
  return run_chapter(app, argc, argv, [&] {
    check_serving_flags(app, o.serving);
    refuse_inapplicable_flags(
        app, {{"--dump-logits", false, "", "this chapter"},
              {"--reps", !sim_clock(o.serving), "to --clock real", "--clock " + o.serving.clock}});
    return run(o);
  });
}
