#pragma once
/// @file speculative_cli.hpp
/// @brief Chapter 07's command line: the flags that choose and tune the proposers, the checks
/// that name those flags, the draft model's loading, and the text tables of the results (one
/// row per proposer run, one table of batch sizes per simulated K).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/analysis/speculative_compare.hpp"
#include "inferlab/analysis/speculative_sim.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/real_clock_repeats.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Chapter 07's own flags (the generation flags are GenerationFlags).
struct SpeculativeFlags {
  /// --proposer, --k, --sweep-k, --exit-layer, --ngram, --tree-branch, --tree-depth
  ProposerChoice choice;
  std::string draft;                      ///< --draft: a draft model's file
  std::string kv = "contiguous";          ///< --kv: contiguous or paged
  int block_size = 16;                    ///< --block-size: positions per block with --kv paged
  std::string clock = "real";             ///< --clock: real (run the model) or sim (the roofline)
  std::string plot;                       ///< --plot: the SVG file (speed-up vs K, or vs batch)
  std::string hardware = "h100-sxm";      ///< --hardware: the simulated machine
  std::string sim_target = "llama3-70b";  ///< --sim-target: the simulated target's shape
  std::string sim_draft = "llama3-8b";    ///< --sim-draft: the simulated draft's shape
  double acceptance = 0.8;                ///< --acceptance: the simulated acceptance rate
  std::int64_t context = 1024;            ///< --context: simulated cached tokens per sequence
  int reps = 3;  ///< --reps: real clock, runs of the whole comparison (the tables print medians)
};

/// @brief Registers the flags of @p f on @p app, and the flags of the core parameters whose
/// flag is not their kebab-case name (set_parameter_flag(): `max_n` is --ngram, `alpha` is
/// --acceptance).
/// @param app the chapter's command line
/// @param f where the values go
void add_speculative_flags(CLI::App& app, SpeculativeFlags& f);

/// @brief Refuses, before any work, a flag that does nothing in the mode chosen
/// (refuse_inapplicable_flags()): the simulator's flags on the real clock, the real run's flags
/// (proposers, models, prompt, sampling, KV storage) on the simulated one, a proposer's own
/// flags when --proposer leaves it out, --block-size without --kv paged. Also checks that
/// --plot can be written.
/// @param app the parsed command line
/// @param f the chapter's flags
/// @throws inferlab::Error naming the flag and the mode
void check_speculative_flags(const CLI::App& app, const SpeculativeFlags& f);

/// @brief The proposers the flags choose, on the device @p gen names and the storage of --kv
/// and --block-size; a --plot asks for every K (the sweep). Checks what needs no model.
/// @param f the chapter's flags
/// @param gen the generation flags (--device)
/// @return f.choice with its storage and sweep set
/// @throws inferlab::Error for --proposer tree on a device without tree attention, or
/// --proposer draft without --draft.
ProposerChoice proposer_choice(const SpeculativeFlags& f, const GenerationFlags& gen);

/// @brief Checks @p choice against @p target (check_proposer_choice(), and the tree's size as
/// --tree-branch and --tree-depth), then loads the --draft model when a chosen proposer uses
/// it.
/// @param f the chapter's flags
/// @param choice proposer_choice() of @p f
/// @param target the target's shape
/// @param steps positions the run forwards: a draft must hold them all in its context
/// @return the draft model, or nothing when none is given or used
/// @throws inferlab::ParameterError from check_proposer_choice(); inferlab::Error for a tree
/// beyond kMaxTreeNodes nodes, a draft that cannot be loaded, whose vocabulary differs from
/// the target's or whose context is shorter than @p steps (it would stop proposing there).
std::optional<Model> load_draft(const SpeculativeFlags& f, const ProposerChoice& choice,
                                const ModelConfig& target, int steps);

/// @brief compare_proposers() run several times on the real clock: the first comparison with
/// its timed numbers (tokens/s, speed-ups, c, v, plain decoding's time) replaced by their
/// medians over the runs, and the range of each row's measured speed-up.
struct RepeatedProposers {
  ProposerComparison median;      ///< the comparison to print, plot and write as JSON
  std::vector<Repeated> speedup;  ///< (median.runs) speedup_measured over the runs
  int runs = 1;                   ///< comparisons behind the medians
};

/// @brief The medians of @p runs (the same comparison, one or more times; the counts, tokens and
/// acceptance are the first run's: with the same seeds every run draws the same tokens).
/// @throws inferlab::Error if @p runs is empty.
RepeatedProposers median_of_runs(const std::vector<ProposerComparison>& runs);

/// @brief Prints one row per run: proposer, K, alpha, accepted tokens per round, target
/// forwards per token, tokens/s, measured speed-up and its spread over the repeats, predicted
/// speed-up, the cost ratios c and v, and the acceptance at depths 1..8; with the column
/// heads, and a legend below. A row whose repeats put the speed-up on both sides of 1 is marked.
/// @param r the repeated comparison
void print_proposer_table(const RepeatedProposers& r);

/// @brief With several K per proposer (--sweep-k): for each proposer, the K with the best
/// median measured speed-up, the K the formula predicts best, and whether the runs' ranges
/// separate the best K from the next.
/// @param r the repeated comparison
void print_best_k(const RepeatedProposers& r);

/// @brief Prints, for every K of @p sweep, its expected tokens per round, one row per batch
/// (the three step times, the speed-up, whether verification is memory- or compute-bound) and
/// the batch where speculation stops paying.
/// @param sweep a simulate_k_sweep() result
void print_sim_sweep(const SpecSimSweep& sweep);

}  // namespace inferlab
