// Chapter 05: PagedAttention.
//
// Serves one workload twice on one KV memory budget: contiguous reservations (prompt +
// max_tokens positions at admission, as engines did before paging) and paged blocks (taken only
// when a sequence's last block is full). Prints the reserved memory that sat unused, how many
// sequences fit and the throughput; --plot draws memory over time and the block tables.
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/paging_report.hpp"
#include "inferlab/app/serving_cli.hpp"
#include "inferlab/app/serving_json.hpp"
#include "inferlab/app/serving_report.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/run_compare.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  ServingFlags serving;
  std::string allocator = "both", reserve = "max-tokens", preempt = "recompute", plot;
  std::string kv_dtype = "f32";
  int block_size = 16, n = 1;
  int reps = 3;  // real clock: runs of the whole comparison; the tables print their medians
  double kv_memory_mib = 0.0;  // 0: room for 2048 positions of the model
  double swap_memory_mib = 64.0;
  bool sweep_block_size = false;
};

constexpr double kMiB = 1024.0 * 1024.0;

// The flags that apply only in some modes (refuse_inapplicable_flags).
void check_mode_flags(const CLI::App& app, const Options& o) {
  const std::string allocator = "--allocator " + o.allocator;
  std::vector<FlagScope> scopes = {
      {"--dump-logits", false, "", "this chapter"},
      {"--block-size", o.allocator != "contiguous", "with --allocator paged or both", allocator},
      {"--reserve", o.allocator != "paged", "with --allocator contiguous or both", allocator},
      // A contiguous reservation covers the whole request: nothing is ever preempted.
      {"--preempt", o.allocator != "contiguous", "with --allocator paged or both", allocator},
      {"--swap-memory", o.preempt == "swap", "with --preempt swap", "--preempt " + o.preempt},
      {"--sweep-block-size", !o.gen.json, "to the text report", "--json"}};
  for (const FlagScope& s : real_clock_flag_scopes(o.serving)) scopes.push_back(s);
  refuse_inapplicable_flags(app, scopes);
}

int run(const Options& o) {
  const GenerationFlags& f = o.gen;
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  const bool sim = sim_clock(o.serving);
  const DType kv_type = parse_kv_dtype(o.kv_dtype);
  const ServedModel m(o.serving, f, kv_type);
  std::vector<Allocator> allocators = {Allocator::contiguous, Allocator::paged};
  if (o.allocator != "both") allocators = {parse_allocator(o.allocator)};
  const Preempt preempt = parse_preempt(o.preempt);
  const Workload w = make_workload(o.serving, f.sampling);
  std::vector<Request> requests = w.requests;
  for (Request& r : requests) r.n = o.n;

  const ModelConfig& config = m.config();
  const std::size_t per_token = kv_storage_bytes_per_token(config, kv_type);
  MemoryConfig memory;
  memory.block_size = o.block_size;
  memory.reserve = o.reserve == "context" ? Reserve::context : Reserve::max_tokens;
  memory.budget_bytes =
      o.kv_memory_mib > 0 ? std::size_t(o.kv_memory_mib * kMiB) : per_token * 2048;
  memory.swap_bytes = preempt == Preempt::swap ? std::size_t(o.swap_memory_mib * kMiB) : 0;
  SchedulerConfig sc = scheduler_config(o.serving, Policy::continuous);
  sc.preempt = preempt;
  if (o.n > sc.max_seqs)  // a request's branches run side by side, each in a slot
    throw Error(fmt::format("--n {0}: each request needs {0} batch slots at once, more than "
                            "--max-seqs {1}",
                            o.n, sc.max_seqs));
  // Everything that could stop the run is checked before its header: every prompt against the
  // context, the memory against the machine (real clock), every request against the budget
  // under each allocator's rule.
  check_workload_lengths(w, o.serving, *m.loaded.tokenizer, config);
  require_kv_budget(memory.budget_bytes, sim ? &*m.engine.sim : nullptr, "--kv-memory");
  for (Allocator a : allocators) {
    MemoryConfig mem = memory;
    mem.allocator = a;
    check_workload_fits(requests, mem, config, kv_type, &*m.loaded.tokenizer);
  }

  if (!f.json) {
    print_serving_title("InferLab chapter 05: PagedAttention", m, f, o.serving);
    std::printf("workload:  %s%s\n", w.description.c_str(),
                o.n > 1 ? fmt::format(", {} parallel samples each", o.n).c_str() : "");
    std::printf(
        "memory:    %.2f MiB of KV (%zu bytes per position in %s = %zu positions); "
        "blocks of %d; contiguous reserves %s; preemption: %s\n",
        memory.budget_bytes / kMiB, per_token, dtype_name(kv_type), memory.budget_bytes / per_token,
        o.block_size, o.reserve == "context" ? "the whole context" : "prompt + max_tokens - 1",
        preempt_name(preempt));
    if (sim) print_sim_memory_fit(*m.engine.sim, memory.budget_bytes);
    std::printf("\n");
  }

  // The simulated clock is deterministic: one run. The real clock is not: the tables print
  // medians of o.reps runs, and a ratio the runs disagree on is reported as noise.
  const RepeatedAllocators rc = compare_allocators_repeated(requests, sc, memory, allocators,
                                                            m.engine, sim ? 1 : o.reps, !f.json);
  const AllocatorComparison& c = rc.median;
  if (!o.plot.empty())
    save_paging_plot(
        o.plot, c,
        fmt::format("KV memory over time: {} ({} clock)", m.plot_name(o.serving), o.serving.clock));
  if (f.json) {
    nlohmann::json out = to_json(c);
    out.update({{"chapter", "05_paged_attention"},
                {"model", m.name(o.serving)},
                {"clock", o.serving.clock},
                {"workload", w.description},
                {"n", o.n},
                {"kv_dtype", dtype_name(kv_type)},
                {"preempt", preempt_name(preempt)}});
    std::cout << out.dump(1) << '\n';
    return c.same_tokens || sim ? 0 : 1;
  }
  // Waste from the engine on the same workload; attention time from one layer of this model.
  std::optional<BlockSizeSweep> sweep;
  if (o.sweep_block_size) {
    std::fprintf(stderr, "[block size sweep...]\n");
    sweep = block_size_sweep(
        [&](const MemoryConfig& mem) { return m.engine.serve(requests, sc, mem); }, memory, config);
  }
  print_allocator_comparison(rc, sim);
  if (sweep) print_block_size_sweep(*sweep);
  if (sim) {
    // Priced in the run's own KV type, the bytes per position its header printed.
    CostOptions cost = m.engine.sim->cost;
    cost.kv_dtype = kv_type;
    print_swap_vs_recompute(swap_vs_recompute_table(config, m.engine.sim->hardware, cost, 50e9),
                            o.serving.config, o.serving.hardware, kv_type);
  }
  if (!o.plot.empty()) std::printf("\nplot written to %s\n", o.plot.c_str());
  return c.same_tokens || sim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 05: PagedAttention (contiguous vs paged KV memory)"};
  Options o;
  add_generation_flags(app, o.gen);
  remove_prompt_flags(app);
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
  app.add_option("--reps", o.reps,
                 "real clock: runs of the whole comparison (tables print medians)")
      ->check(integer_in(1, 100))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG of KV memory over time and the block tables");
  app.add_flag("--sweep-block-size", o.sweep_block_size,
               "waste and attention time per step for block sizes 1..128");
  return run_chapter(app, argc, argv, [&] {
    check_serving_flags(app, o.serving);
    check_mode_flags(app, o);
    return run(o);
  });
}
