// Chapter 07: speculative decoding.
//
// A cheap proposer guesses K tokens; the target model (the --model) checks them all in one
// forward call and keeps the longest prefix that exact rejection sampling accepts, plus one
// token of its own. The chapter runs plain decoding and every proposer in the same process
// (draft model, early exit, n-gram lookup, token tree), checks that greedy speculative output is
// the plain greedy output token for token, and puts the measured speed-up next to the standard
// model's prediction. --clock sim runs the same arithmetic on chapter 03's roofline for a
// datacenter pair (Llama-3-8B drafting for Llama-3-70B on an H100) and shows where speculation
// stops paying as the batch grows. All the logic lives in common/ (speculative.hpp,
// speculative_sim.hpp); this file parses flags, calls it and prints.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/runtime/speculative.hpp"
#include "inferlab/analysis/speculative_sim.hpp"
#include "inferlab/app/svg.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags gen;
  std::string proposer = "all";
  std::string draft;
  int k = 4;
  int exit_layer = 0;  // 0: half the target's layers
  int ngram = 3;
  int tree_branch = 2;
  int tree_depth = 3;
  std::string kv = "contiguous";  // contiguous or paged
  int block_size = 16;            // --kv paged: positions per block
  bool sweep_k = false;
  std::string clock = "real";
  std::string plot;
  // --clock sim
  std::string hardware = "h100-sxm";
  std::string sim_target = "llama3-70b";
  std::string sim_draft = "llama3-8b";
  double acceptance = 0.8;
  std::int64_t context = 1024;
};

constexpr int kSweepMaxK = 8;

std::string text_of(const Tokenizer& tok, const std::vector<int>& tokens, std::size_t from) {
  StreamDecoder d(tok);
  std::string text;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < tokens.size(); ++i) {
    if (tokens[i] == kBosToken) break;
    text += d.push(tokens[i - 1], tokens[i]);
  }
  return text + d.flush();
}

// One measured run of one proposer at one K.
struct Row {
  std::string name;
  int k = 0;
  SpecGeneration run;
  SpeedupReport report;
  bool same_as_plain = false;
};

nlohmann::json row_json(const Row& r) {
  nlohmann::json per_position = nlohmann::json::array();
  for (int d = 0; d < static_cast<int>(r.run.stats.tried_at.size()); ++d)
    per_position.push_back(r.run.stats.acceptance_at(d));
  return {{"name", r.name},
          {"k", r.k},
          {"acceptance_rate", r.run.stats.acceptance_rate()},
          {"acceptance_per_position", per_position},
          {"mean_accepted_per_round", r.run.stats.mean_accepted_per_round()},
          {"target_forwards_per_token", r.report.target_forwards_per_token},
          {"tokens_per_s", r.report.tokens_per_s},
          {"speedup_measured", r.report.speedup_measured},
          {"speedup_predicted", r.report.speedup_predicted},
          {"speedup_predicted_ideal", r.report.speedup_predicted_ideal},
          {"draft_cost_ratio", r.report.draft_cost_ratio},
          {"verify_cost_ratio", r.report.verify_cost_ratio},
          {"generated_tokens", r.run.generated},
          {"same_tokens_as_plain", r.same_as_plain}};
}

void print_row(const Row& r) {
  const SpecStats& s = r.run.stats;
  std::printf("  %-11s %2d  %6.3f  %6.2f  %7.3f  %9.0f  %6.2fx  %6.2fx  %5.3f  %5.2f  ",
              r.name.c_str(), r.k, s.acceptance_rate(), s.mean_accepted_per_round(),
              r.report.target_forwards_per_token, r.report.tokens_per_s, r.report.speedup_measured,
              r.report.speedup_predicted, r.report.draft_cost_ratio, r.report.verify_cost_ratio);
  for (int d = 0; d < static_cast<int>(s.tried_at.size()) && d < 8; ++d)
    std::printf("%s%.2f", d ? " " : "", s.acceptance_at(d));
  std::printf("\n");
}

void print_table_header() {
  std::printf("  %-11s %2s  %6s  %6s  %7s  %9s  %7s  %7s  %5s  %5s  %s\n", "proposer", "K", "alpha",
              "acc/rd", "fwd/tok", "tokens/s", "speedup", "predict", "c", "v",
              "alpha at depth 1, 2, ...");
}

void write_plot(const std::string& path, const std::vector<Row>& rows, const std::string& model) {
  SvgPlot plot("Speculative decoding: speed-up vs K (" + model + ")");
  plot.set_x_axis("K (tokens proposed per round)");
  plot.set_y_axis("speed-up over plain decoding");
  std::vector<std::string> names;
  for (const Row& r : rows)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (const std::string& name : names) {
    std::vector<double> k, measured, predicted;
    for (const Row& r : rows) {
      if (r.name != name) continue;
      k.push_back(r.k);
      measured.push_back(r.report.speedup_measured);
      predicted.push_back(r.report.speedup_predicted);
    }
    plot.add_line(name + " measured", k, measured);
    SvgStyle dashed;
    dashed.dashed = true;
    plot.add_line(name + " predicted", k, predicted, dashed);
  }
  plot.add_hline(1.0, "plain decoding");
  plot.set_legend(LegendPosition::top_right);
  plot.save(path);
}

// The K values a run measures: 1..8 for the sweep or the plot, else --k.
std::vector<int> k_values(const Options& o) {
  std::vector<int> ks;
  if (o.sweep_k || !o.plot.empty()) {
    for (int k = 1; k <= kSweepMaxK; ++k) ks.push_back(k);
  } else {
    ks.push_back(o.k);
  }
  return ks;
}

// --clock sim: one simulated curve per K.
struct SimCurve {
  int k = 0;
  std::vector<SpecSimPoint> points;  // one per batch size
  int break_even = -1;               // break_even_batch(points)
};

struct SimResult {
  Hardware hardware;
  std::vector<int> batches;  // 1, 2, 4, ..., 1024
  std::vector<SimCurve> curves;
};

nlohmann::json sim_json(const Options& o, const SimResult& res) {
  nlohmann::json sims = nlohmann::json::array();
  nlohmann::json proposers = nlohmann::json::array();
  for (const SimCurve& c : res.curves) {
    nlohmann::json pts = nlohmann::json::array();
    for (const SpecSimPoint& p : c.points)
      pts.push_back({{"batch", p.batch},
                     {"plain_step_s", p.plain_step_s},
                     {"draft_step_s", p.draft_step_s},
                     {"verify_step_s", p.verify_step_s},
                     {"speedup", p.speedup},
                     {"verify_memory_bound", p.verify_memory_bound}});
    sims.push_back({{"k", c.k}, {"break_even_batch", c.break_even}, {"points", pts}});
    const SpecSimPoint& one = c.points[0];
    proposers.push_back({{"name", "draft (simulated)"},
                         {"k", c.k},
                         {"acceptance_rate", o.acceptance},
                         {"mean_accepted_per_round", one.tokens_per_round - 1.0},
                         {"tokens_per_s", one.tokens_per_s},
                         {"speedup_measured", nullptr},
                         {"speedup_predicted", one.speedup}});
  }
  return {{"chapter", "07_speculative_decoding"},
          {"clock", "sim"},
          {"hardware", res.hardware.name},
          {"target", o.sim_target},
          {"draft", o.sim_draft},
          {"context", o.context},
          {"tokens", nlohmann::json::array()},
          {"text", ""},
          {"proposers", proposers},
          {"simulation", sims}};
}

void print_sim(const Options& o, const SimResult& res) {
  const Hardware& hw = res.hardware;
  std::printf(
      "InferLab chapter 07, simulated: %s drafting for %s on %s (%s), acceptance %.2f, "
      "context %lld\n",
      o.sim_draft.c_str(), o.sim_target.c_str(), hw.name.c_str(), hw.description.c_str(),
      o.acceptance, static_cast<long long>(o.context));
  std::printf("(roofline lower bounds of chapter 03; both models' weights are assumed resident)\n");
  for (const SimCurve& c : res.curves) {
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
      std::printf("  speculation pays at every simulated batch up to %d\n", res.batches.back());
  }
  std::printf(
      "\nWhy it shrinks: at batch 1 the target step reads all its weights for one token, so "
      "verifying K + 1 tokens costs about the same; as the batch grows the verification's "
      "(K + 1)x FLOPs reach the compute roof and the saving is gone.\n");
}

void write_sim_plot(const Options& o, const SimResult& res) {
  SvgPlot plot(fmt::format("Simulated speculative decoding: {} drafting for {} on {}, alpha = {}",
                           o.sim_draft, o.sim_target, res.hardware.name, o.acceptance));
  plot.set_x_axis("batch (sequences decoding together)", AxisScale::log);
  plot.set_y_axis("speed-up over plain decoding");
  for (const SimCurve& c : res.curves) {
    std::vector<double> x, y;
    for (const SpecSimPoint& p : c.points) {
      x.push_back(p.batch);
      y.push_back(p.speedup);
    }
    plot.add_line(fmt::format("K = {}", c.k), x, y);
  }
  plot.add_hline(1.0, "plain decoding");
  plot.set_legend(LegendPosition::top_right);
  plot.save(o.plot);
}

int run_sim(const Options& o) {
  SimResult res;
  res.hardware = hardware_by_name(o.hardware);
  const ModelConfig target = named_config(o.sim_target), draft = named_config(o.sim_draft);
  if (target.vocab_size != draft.vocab_size) {
    throw Error(fmt::format("--sim-draft {} has a vocabulary of {} but --sim-target {} has {}",
                            o.sim_draft, draft.vocab_size, o.sim_target, target.vocab_size));
  }
  for (int b = 1; b <= 1024; b *= 2) res.batches.push_back(b);
  const CostOptions cost = cost_options_for(res.hardware);
  for (int k : k_values(o)) {
    SimCurve c;
    c.k = k;
    c.points = simulate_speculation(target, draft, res.hardware, o.acceptance, k, o.context,
                                    res.batches, cost);
    c.break_even = break_even_batch(c.points);
    res.curves.push_back(std::move(c));
  }
  if (!o.plot.empty()) write_sim_plot(o, res);
  if (o.gen.json)
    std::cout << sim_json(o, res).dump(1) << '\n';
  else
    print_sim(o, res);
  return 0;
}

// --clock real: plain decoding and every proposer's run.
struct RealResult {
  std::string model;  // the target's name
  std::size_t prompt_tokens = 0;
  SpecGeneration plain;   // plain decoding: the reference tokens and the speed-up's denominator
  std::vector<Row> rows;  // one per proposer and K
  std::string text;       // the first row's text, the prompt echoed
};

nlohmann::json real_json(const Options& o, const RealResult& res) {
  nlohmann::json props = nlohmann::json::array();
  for (const Row& r : res.rows) props.push_back(row_json(r));
  return {{"chapter", "07_speculative_decoding"},
          {"model", res.model},
          {"device", o.gen.device},
          {"kv", o.kv},
          {"block_size", o.kv == "paged" ? o.block_size : 0},
          {"prompt", o.gen.prompt},
          {"tokens", res.rows.front().run.tokens},
          {"text", res.text},
          {"plain_tokens_per_s", res.plain.generated / res.plain.decode_seconds},
          {"proposers", props}};
}

// Prints the run; the exit code is 1 when greedy speculation changed a token.
int print_real(const Options& o, const RealResult& res) {
  const bool greedy = o.gen.sampling.greedy();
  std::printf("%s\n", res.text.c_str());
  std::printf("\n--- %s decoding: %d new tokens after a %zu-token prompt ---\n",
              greedy ? "greedy" : "sampled", res.plain.generated, res.prompt_tokens);
  std::printf("plain decoding: %.0f tokens/s (one target forward per token)\n\n",
              res.plain.generated / res.plain.decode_seconds);
  print_table_header();
  for (const Row& r : res.rows) print_row(r);
  std::printf(
      "\n  alpha: accepted / tried positions; acc/rd: draft tokens accepted per round; fwd/tok: "
      "target forwards per generated token;\n  predict: (1 - alpha^(K+1)) / (1 - alpha) / (K c + "
      "v) "
      "with c = proposer time per position and v = verification time per round, both over one "
      "plain decode step,\n  measured in this run (the textbook's v = 1 assumes verification is "
      "free while memory-bound).\n");
  if (greedy) {
    bool all_same = true;
    for (const Row& r : res.rows) all_same = all_same && r.same_as_plain;
    std::printf("\ngreedy: every proposer's tokens equal plain greedy decoding's: %s\n",
                all_same ? "yes" : "NO (a bug)");
    if (!all_same) return 1;
  } else {
    std::printf(
        "\nsampling: the tokens differ from the plain run's (other random draws), the "
        "distribution does not (tests/test_speculative.cpp checks it with a chi-square "
        "test).\n");
  }
  if (!o.plot.empty()) {
    write_plot(o.plot, res.rows, res.model);
    std::printf("plot written to %s\n", o.plot.c_str());
  }
  std::printf(
      "\nNext: --clock sim shows the same trade on datacenter hardware, and where a "
      "growing batch makes it stop paying.\n");
  return 0;
}

int run(const Options& o) {
  if (o.clock == "sim") return run_sim(o);
  const GenerationFlags& f = o.gen;
  const Device device = parse_device(f.device);
  // The tree needs tree attention, which only the CPU runner has: an explicit --proposer tree on
  // CUDA is an error, and "all" runs the chain proposers and says why the tree is left out.
  const bool tree_on_device = device == Device::cpu;
  if (o.proposer == "tree" && !tree_on_device) {
    throw Error(
        fmt::format("--proposer tree on --device {}: tree verification needs tree "
                    "attention (each node attends to its ancestors only), which the {} "
                    "runner does not have; use --device cpu for the tree",
                    f.device, f.device));
  }
  if (o.proposer == "draft" && o.draft.empty()) {
    throw Error(
        "--proposer draft needs --draft PATH (a second model with the target's vocabulary)");
  }
  const LoadedModel m = load_model(f);
  const Model& target_model = *m.model;
  const ModelConfig& c = target_model.config();
  const int steps = f.steps <= 0 || f.steps > c.seq_len ? c.seq_len : f.steps;
  if (o.k < 1 || o.k >= c.seq_len) {
    throw Error(fmt::format("--k {}: must be in [1, {}] (the context is {} tokens)", o.k,
                            c.seq_len - 1, c.seq_len));
  }
  const int exit_layer = o.exit_layer == 0 ? std::max(1, c.n_layers / 2) : o.exit_layer;
  const auto want = [&](const char* name) { return o.proposer == "all" || o.proposer == name; };
  const bool have_draft = !o.draft.empty() && (want("draft") || want("tree"));
  // The early exit drafts for itself and, without a draft model, for the tree.
  const bool need_early = want("early-exit") || (want("tree") && !have_draft);
  if ((need_early || o.exit_layer != 0) && (exit_layer < 1 || exit_layer >= c.n_layers)) {
    throw Error(fmt::format("--exit-layer {}: must be in [1, {}] (the model has {} layers)",
                            exit_layer, c.n_layers - 1, c.n_layers));
  }
  std::optional<Model> draft_model;
  if (have_draft) {
    draft_model = Model::load(find_model(o.draft));
    if (draft_model->config().vocab_size != c.vocab_size) {
      throw Error(fmt::format("--draft {}: its vocabulary has {} tokens but the target's has {}",
                              o.draft, draft_model->config().vocab_size, c.vocab_size));
    }
  }
  if (o.kv == "paged" && o.block_size > c.seq_len) {
    throw Error(fmt::format("--block-size {}: larger than the model's context of {} positions",
                            o.block_size, c.seq_len));
  }
  const std::vector<int> prompt = m.tokenizer->encode(f.prompt, /*bos=*/true);
  if (static_cast<int>(prompt.size()) > steps) {
    throw Error(fmt::format("the prompt is {} tokens but --steps is {}", prompt.size(), steps));
  }

  if (!f.json) {
    print_run_header(
        "InferLab chapter 07: speculative decoding", m, f,
        fmt::format("proposers: {}, K = {}, early exit after layer {} of {}, n-gram {}, "
                    "tree {}x{}\nKV cache:  {}",
                    o.proposer, o.k, exit_layer, c.n_layers, o.ngram, o.tree_branch, o.tree_depth,
                    o.kv == "paged" ? fmt::format("paged, blocks of {} positions (rollback "
                                                  "gives whole blocks back)",
                                                  o.block_size)
                                    : std::string("contiguous")));
    if (want("tree") && !tree_on_device) {
      std::printf(
          "note: the tree proposer is skipped on --device %s (tree attention runs on the "
          "CPU only)\n\n",
          f.device.c_str());
    }
  }

  // Target and drafts share the device and the storage; each has its own cache.
  SpecModelOptions storage;
  storage.device = device;
  storage.block_size = o.kv == "paged" ? o.block_size : 0;
  SpecModel target(target_model, storage);
  std::unique_ptr<SpecModel> early;
  if (need_early && (want("early-exit") || tree_on_device))
    early = SpecModel::early_exit(target_model, exit_layer, storage);
  std::unique_ptr<SpecModel> draft;
  if (draft_model) draft = std::make_unique<SpecModel>(*draft_model, storage);

  // Plain decoding of the same target: the reference tokens and the speed-up's denominator.
  const SpecGeneration plain = plain_generate(target, prompt, steps, f.sampling);

  std::vector<Row> rows;
  auto measure = [&](Proposer& proposer, int k_report) {
    Row r;
    r.name = proposer.name();
    r.k = k_report;
    r.run = speculative_generate(target, proposer, prompt, steps, f.sampling);
    r.report = speedup_report(r.run, plain, k_report);
    r.same_as_plain = r.run.tokens == plain.tokens;
    rows.push_back(std::move(r));
  };
  for (int k : k_values(o)) {
    if (want("draft") && draft) {
      DraftModelProposer p(*draft, f.sampling, k, "draft");
      measure(p, k);
    }
    if (want("early-exit") && early) {
      DraftModelProposer p(*early, f.sampling, k, "early-exit");
      measure(p, k);
    }
    if (want("ngram")) {
      NgramProposer p(o.ngram, k, c.vocab_size);
      measure(p, k);
    }
  }
  if (want("tree") && tree_on_device) {
    // The tree drafts with the draft model when there is one, else with the early exit; its K
    // in the formula is its depth (one draft forward per level).
    TreeProposer p(draft ? *draft : *early, f.sampling, o.tree_branch, o.tree_depth);
    measure(p, o.tree_depth);
  }
  if (rows.empty()) throw Error("no proposer to run (--proposer draft needs --draft PATH)");

  RealResult res{target_model.name(), prompt.size(), plain, std::move(rows), ""};
  // Like every chapter's text: the prompt echoed, then the generation.
  res.text = text_of(*m.tokenizer, res.rows.front().run.tokens, 1);
  if (f.json) {
    std::cout << real_json(o, res).dump(1) << '\n';
    if (!o.plot.empty()) write_plot(o.plot, res.rows, title_model_name(res.model));
    return 0;
  }
  return print_real(o, res);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 07: speculative decoding (a cheap proposer guesses, the target "
      "verifies K tokens in one forward, the output distribution stays the target's)"};
  Options o;
  add_generation_flags(app, o.gen);
  app.add_option("--proposer", o.proposer, "draft, early-exit, ngram, tree or all (side by side)")
      ->check(CLI::IsMember({"draft", "early-exit", "ngram", "tree", "all"}))
      ->capture_default_str();
  app.add_option("--draft", o.draft, "draft model (a llama2.c file with the target's vocabulary)");
  app.add_option("--k", o.k, "tokens proposed per round")->capture_default_str();
  app.add_option("--exit-layer", o.exit_layer,
                 "early exit: the draft is the target's first N layers (default: half)");
  app.add_option("--ngram", o.ngram, "n-gram lookup: longest suffix to match")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--tree-branch", o.tree_branch, "tree: children per node")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--tree-depth", o.tree_depth, "tree: levels")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--kv", o.kv, "KV storage of target and drafts: contiguous or paged")
      ->check(CLI::IsMember({"contiguous", "paged"}))
      ->capture_default_str();
  app.add_option("--block-size", o.block_size, "--kv paged: positions per KV block")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("--sweep-k", o.sweep_k, "run K = 1..8 for every chain proposer");
  app.add_option("--clock", o.clock, "real (run the model) or sim (chapter 03's roofline)")
      ->check(CLI::IsMember({"real", "sim"}))
      ->capture_default_str();
  app.add_option("--plot", o.plot,
                 "write an SVG of speed-up vs K, measured and predicted (real) "
                 "or vs batch (sim)");
  app.add_option("--hardware", o.hardware, "sim: the machine (see chapter 03)")
      ->capture_default_str();
  app.add_option("--sim-target", o.sim_target, "sim: the target's shape")->capture_default_str();
  app.add_option("--sim-draft", o.sim_draft, "sim: the draft's shape")->capture_default_str();
  app.add_option("--acceptance", o.acceptance, "sim: acceptance rate alpha")->capture_default_str();
  app.add_option("--context", o.context, "sim: cached tokens per sequence")->capture_default_str();
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
