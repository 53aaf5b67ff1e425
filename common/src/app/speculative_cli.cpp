// Chapter 07's command line: flags, the checks that name them, the draft, the text tables.
#include "inferlab/app/speculative_cli.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <limits>

#include <fmt/format.h>

#include "inferlab/app/cli_checks.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/model/model_files.hpp"

namespace inferlab {

void add_speculative_flags(CLI::App& app, SpeculativeFlags& f) {
  ProposerChoice& c = f.choice;
  app.add_option("--proposer", c.proposer, "draft, early-exit, ngram, tree or all (side by side)")
      ->check(CLI::IsMember({"draft", "early-exit", "ngram", "tree", "all"}))
      ->capture_default_str();
  app.add_option("--draft", f.draft, "draft model (a llama2.c file with the target's vocabulary)");
  // Any integer is read here; the core names the range that applies (it depends on the model).
  constexpr int kIntMin = std::numeric_limits<int>::min();
  constexpr int kIntMax = std::numeric_limits<int>::max();
  app.add_option("--k", c.k, "tokens proposed per round")
      ->check(integer_in(kIntMin, kIntMax))
      ->capture_default_str();
  app.add_option("--exit-layer", c.exit_layer,
                 "early exit: the draft is the target's first N layers (default: half)")
      ->check(integer_in(kIntMin, kIntMax));
  app.add_option("--ngram", c.max_n, "n-gram lookup: longest suffix to match")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--tree-branch", c.tree_branch, "tree: children per node")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--tree-depth", c.tree_depth, "tree: levels")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--kv", f.kv, "KV storage of target and drafts: contiguous or paged")
      ->check(CLI::IsMember({"contiguous", "paged"}))
      ->capture_default_str();
  app.add_option("--block-size", f.block_size, "--kv paged: positions per KV block")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("--sweep-k", c.sweep_k, "run K = 1..8 for every chain proposer");
  app.add_option("--reps", f.reps,
                 "real clock: runs of the whole comparison (the tables print medians)")
      ->check(integer_in(1, 100))
      ->capture_default_str();
  app.add_option("--clock", f.clock, "real (run the model) or sim (chapter 03's roofline)")
      ->check(CLI::IsMember({"real", "sim"}))
      ->capture_default_str();
  app.add_option("--plot", f.plot,
                 "write an SVG of speed-up vs K, measured and predicted (real) "
                 "or vs batch (sim)");
  app.add_option("--hardware", f.hardware, "sim: the machine (see chapter 03)")
      ->capture_default_str();
  app.add_option("--sim-target", f.sim_target, "sim: the target's shape")->capture_default_str();
  app.add_option("--sim-draft", f.sim_draft, "sim: the draft's shape")->capture_default_str();
  app.add_option("--acceptance", f.acceptance, "sim: acceptance rate alpha")->capture_default_str();
  app.add_option("--context", f.context, "sim: cached tokens per sequence")
      ->check(integer_in(std::numeric_limits<long long>::min(),
                         std::numeric_limits<long long>::max()))
      ->capture_default_str();
  set_parameter_flag("max_n", "--ngram");
  set_parameter_flag("alpha", "--acceptance");
}

void check_speculative_flags(const CLI::App& app, const SpeculativeFlags& f) {
  const bool sim = f.clock == "sim";
  const std::string clock = "--clock " + f.clock, proposer = "--proposer " + f.choice.proposer;
  std::vector<FlagScope> scopes;
  for (const char* flag :
       {"--hardware", "--sim-target", "--sim-draft", "--acceptance", "--context"})
    scopes.push_back({flag, sim, "to --clock sim", clock});
  for (const char* flag :
       {"--proposer", "--draft", "--exit-layer", "--ngram", "--tree-branch", "--tree-depth", "--kv",
        "--block-size", "--model", "--tokenizer", "--synthetic", "--prompt", "--parse-special",
        "--no-bos", "--steps", "--device", "--threads", "--reps", "--temperature", "--top-k",
        "--top-p", "--min-p", "--repetition-penalty", "--frequency-penalty", "--presence-penalty",
        "--seed"})
    scopes.push_back({flag, !sim, "to --clock real", clock});
  const ProposerChoice& c = f.choice;
  scopes.push_back({"--draft", c.wants("draft") || c.wants("tree"),
                    "with --proposer draft, tree or all", proposer});
  // The tree drafts with the early exit unless it has a draft model.
  scopes.push_back({"--exit-layer", c.wants("early-exit") || (c.wants("tree") && f.draft.empty()),
                    "with --proposer early-exit, tree (without --draft) or all", proposer});
  scopes.push_back({"--ngram", c.wants("ngram"), "with --proposer ngram or all", proposer});
  for (const char* flag : {"--tree-branch", "--tree-depth"})
    scopes.push_back({flag, c.wants("tree"), "with --proposer tree or all", proposer});
  scopes.push_back({"--block-size", f.kv == "paged", "with --kv paged", "--kv " + f.kv});
  // --sweep-k and --plot run every K of k_values(); the tree's size is its branch and depth.
  const bool sweep = c.sweep_k || !f.plot.empty(), tree_only = c.proposer == "tree";
  scopes.push_back({"--k", !sweep && !tree_only,
                    "to one K of a chain proposer (--sweep-k and --plot run K = 1..8)",
                    tree_only ? proposer : c.sweep_k ? "--sweep-k" : "--plot"});
  scopes.push_back({"--sweep-k", !tree_only, "to the chain proposers", proposer});
  refuse_inapplicable_flags(app, scopes);
  if (!f.plot.empty()) require_writable_output(f.plot, "--plot");
}

ProposerChoice proposer_choice(const SpeculativeFlags& f, const GenerationFlags& gen) {
  ProposerChoice choice = f.choice;
  choice.storage.device = parse_device(gen.device);
  choice.storage.block_size = f.kv == "paged" ? f.block_size : 0;
  choice.sweep_k = choice.sweep_k || !f.plot.empty();  // the plot draws every K
  // An explicit --proposer tree without tree attention is an error; "all" leaves the tree out.
  if (choice.proposer == "tree" && !choice.tree_runs()) {
    throw Error(
        fmt::format("--proposer tree on --device {}: tree verification needs tree attention "
                    "(each node attends to its ancestors only), which the {} runner does not "
                    "have; use --device cpu for the tree",
                    gen.device, gen.device));
  }
  if (choice.proposer == "draft" && f.draft.empty()) {
    throw Error(
        "--proposer draft needs --draft PATH (a second model with the target's vocabulary)");
  }
  return choice;
}

std::optional<Model> load_draft(const SpeculativeFlags& f, const ProposerChoice& choice,
                                const ModelConfig& target, int steps) {
  const bool used = !f.draft.empty() && (choice.wants("draft") || choice.wants("tree"));
  check_proposer_choice(choice, target, used);
  const double nodes = tree_node_count(choice.tree_branch, choice.tree_depth);
  if (choice.tree_runs() && nodes > kMaxTreeNodes) {
    throw Error(fmt::format("--tree-branch {} --tree-depth {}: {} nodes (at most {})",
                            choice.tree_branch, choice.tree_depth, nodes, kMaxTreeNodes));
  }
  if (!used) return std::nullopt;
  std::optional<Model> draft = Model::load(find_model(f.draft, "draft"));
  if (draft->config().vocab_size != target.vocab_size) {
    throw Error(fmt::format("--draft {}: its vocabulary has {} tokens but the target's has {}",
                            f.draft, draft->config().vocab_size, target.vocab_size));
  }
  // Past its context a draft cannot propose: the rounds there would be plain decoding while the
  // acceptance rate still counted only the early ones.
  if (draft->config().seq_len < steps) {
    throw Error(fmt::format("--draft {}: its context is {} positions but this run forwards {} "
                            "(--steps; the target's context is {}): lower --steps to {} or use "
                            "a draft with a longer context",
                            f.draft, draft->config().seq_len, steps, target.seq_len,
                            draft->config().seq_len));
  }
  return draft;
}

RepeatedProposers median_of_runs(const std::vector<ProposerComparison>& runs) {
  if (runs.empty()) throw Error("median_of_runs(): no runs");
  RepeatedProposers r;
  r.median = runs.front();
  r.runs = int(runs.size());
  auto median = [&](auto&& get) {
    std::vector<double> v;
    for (const ProposerComparison& c : runs) v.push_back(get(c));
    return repeated(v);
  };
  r.median.plain.decode_seconds =
      median([](const ProposerComparison& c) { return c.plain.decode_seconds; }).median;
  for (std::size_t i = 0; i < r.median.runs.size(); ++i) {
    SpeedupReport& m = r.median.runs[i].report;
    auto of = [&](double SpeedupReport::*field) {
      return median([&](const ProposerComparison& c) { return c.runs[i].report.*field; }).median;
    };
    m.tokens_per_s = of(&SpeedupReport::tokens_per_s);
    m.plain_tokens_per_s = of(&SpeedupReport::plain_tokens_per_s);
    m.draft_cost_ratio = of(&SpeedupReport::draft_cost_ratio);
    m.verify_cost_ratio = of(&SpeedupReport::verify_cost_ratio);
    m.speedup_predicted = of(&SpeedupReport::speedup_predicted);
    m.speedup_predicted_ideal = of(&SpeedupReport::speedup_predicted_ideal);
    r.speedup.push_back(
        median([&](const ProposerComparison& c) { return c.runs[i].report.speedup_measured; }));
    m.speedup_measured = r.speedup.back().median;
  }
  return r;
}

void print_proposer_table(const RepeatedProposers& rep) {
  std::printf("  %-11s %2s  %6s  %6s  %7s  %9s  %7s  %6s  %7s  %5s  %5s  %s\n", "proposer", "K",
              "alpha", "acc/rd", "fwd/tok", "tokens/s", "speedup", "spread", "predict", "c", "v",
              "alpha at depth 1, 2, ...");
  bool unclear = false;
  for (std::size_t i = 0; i < rep.median.runs.size(); ++i) {
    const ProposerRun& r = rep.median.runs[i];
    const SpecStats& s = r.run.stats;
    const Repeated& sp = rep.speedup[i];
    // A speed-up whose runs lie on both sides of 1 says neither "faster" nor "slower".
    const bool noisy = rep.runs > 1 && sp.direction_unclear();
    unclear = unclear || noisy;
    std::printf("  %-11s %2d  %6.3f  %6.2f  %7.3f  %9.0f  %6.2fx%s %5.0f%%  %6.2fx  %5.3f  %5.2f  ",
                r.name.c_str(), r.k, s.acceptance_rate(), s.mean_accepted_per_round(),
                r.report.target_forwards_per_token, r.report.tokens_per_s,
                r.report.speedup_measured, noisy ? "?" : " ", 100 * sp.spread(),
                r.report.speedup_predicted, r.report.draft_cost_ratio, r.report.verify_cost_ratio);
    for (int d = 0; d < static_cast<int>(s.tried_at.size()) && d < 8; ++d)
      std::printf("%s%.2f", d ? " " : "", s.acceptance_at(d));
    std::printf("\n");
  }
  std::printf(
      "\n  alpha: accepted / tried positions; acc/rd: draft tokens accepted per round; fwd/tok: "
      "target forwards per generated token;\n  speedup, c, v, tokens/s: medians of %d runs "
      "(spread: (max - min) / median of the speed-up);\n  predict: (1 - alpha^(K+1)) / "
      "(1 - alpha) / (K c + v) with c = proposer time per position and v = verification time "
      "per round, both over one plain decode step,\n  measured in these runs (the textbook's "
      "v = 1 assumes verification is free while memory-bound).\n",
      rep.runs);
  if (rep.runs < 2)
    std::printf("  single runs: the noise is unknown; --reps 3 or more gives a spread\n");
  if (unclear)
    std::printf(
        "  ?: the runs put this speed-up on both sides of 1: too noisy to say whether it pays "
        "(rerun with --threads 1, more --reps, or on a quieter machine)\n");
}

void print_best_k(const RepeatedProposers& rep) {
  // Rows per proposer, in the order they ran.
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::size_t>> rows;
  for (std::size_t i = 0; i < rep.median.runs.size(); ++i) {
    const std::string& n = rep.median.runs[i].name;
    if (!rows.count(n)) names.push_back(n);
    rows[n].push_back(i);
  }
  bool any = false;
  for (const std::string& n : names) {
    const std::vector<std::size_t>& ix = rows[n];
    if (ix.size() < 2) continue;
    if (!any) std::printf("\nbest K (median measured speed-up over %d runs):\n", rep.runs);
    any = true;
    auto by = [&](auto&& key) {
      return *std::max_element(ix.begin(), ix.end(),
                               [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    };
    const std::size_t best = by([&](std::size_t i) { return rep.speedup[i].median; });
    const std::size_t predicted =
        by([&](std::size_t i) { return rep.median.runs[i].report.speedup_predicted; });
    // The runner-up whose range reaches the best one's: the runs cannot order them.
    int tied_k = 0;
    for (std::size_t i : ix)
      if (i != best && rep.runs > 1 && rep.speedup[i].max >= rep.speedup[best].min)
        tied_k = tied_k ? tied_k : rep.median.runs[i].k;
    std::printf("  %-11s K = %d (%.2fx); the formula predicts K = %d (%.2fx)", n.c_str(),
                rep.median.runs[best].k, rep.speedup[best].median, rep.median.runs[predicted].k,
                rep.median.runs[predicted].report.speedup_predicted);
    if (rep.runs < 2)
      std::printf("; single runs, noise unknown");
    else if (tied_k)
      std::printf("; K = %d is within the runs' range of it", tied_k);
    std::printf("%s\n", rep.speedup[best].median < 1.0 ? "; no K pays here" : "");
  }
}

void print_sim_sweep(const SpecSimSweep& sweep) {
  for (const SpecSimCurve& c : sweep.curves) {
    std::printf("\nK = %d: expected tokens per round %.2f\n", c.k, c.points[0].tokens_per_round);
    std::printf("  %6s  %12s  %12s  %14s  %8s  %s\n", "batch", "plain ms", "draft ms", "verify ms",
                "speedup", "verify step");
    for (const SpecSimPoint& p : c.points)
      std::printf("  %6d  %12.3f  %12.3f  %14.3f  %7.2fx  %s\n", p.batch, p.plain_step_s * 1e3,
                  p.draft_step_s * 1e3, p.verify_step_s * 1e3, p.speedup,
                  p.verify_memory_bound ? "memory-bound" : "compute-bound");
    if (c.break_even > 0)
      std::printf("  speculation stops paying at batch %d (speed-up < 1)\n", c.break_even);
    else
      std::printf("  speculation pays at every simulated batch up to %d\n", sweep.batches.back());
  }
}

}  // namespace inferlab
