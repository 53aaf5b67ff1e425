#pragma once
/// @file serving_cli.hpp
/// @brief The command line that every serving chapter (04 onwards) shares: the clock, the
/// simulated machine, the workload (generated or from a JSONL file) and the scheduler's limits.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/serving/engine.hpp"

namespace inferlab {

/// @brief Serving flags (names and meaning shared by chapters 04-07).
struct ServingFlags {
  std::string clock = "real";                     ///< --clock: real or sim
  std::string hardware = "h100-sxm";              ///< --hardware (sim)
  std::string config = "llama3-8b";               ///< --config (sim): the model shape to time
  double rate = -1.0;                             ///< --rate: < 0 means the clock's default
  int requests = 0;                               ///< --requests: 0 means the clock's default
  std::string prompt_lens = "lognormal:96:0.6";   ///< --prompt-lens
  std::string output_lens = "lognormal:128:0.8";  ///< --output-lens
  /// --prompt-lens and --output-lens of --workload multi-turn when they are not given: short
  /// turns, so that conversations of 4 turns after a 128-token system prompt fit stories260K's
  /// context of 512 tokens (about 1.5% end early).
  std::string multi_turn_prompt_lens = "lognormal:24:0.5";
  std::string multi_turn_output_lens = "lognormal:40:0.5";  ///< see multi_turn_prompt_lens
  bool prompt_lens_given = false;   ///< --prompt-lens was on the command line (set by parsing)
  bool output_lens_given = false;   ///< --output-lens was on the command line (set by parsing)
  int max_prompt = 256;             ///< --max-prompt
  int max_output = 400;             ///< --max-output
  int max_tokens = 0;               ///< --max-tokens: 0 = each request's output length
  std::uint64_t workload_seed = 1;  ///< --workload-seed
  std::string workload_file;        ///< --workload-file (alias --trace-file): JSONL requests
  std::string workload = "random";  ///< --workload: random, shared-prefix, few-shot, ..., rag
  int prefixes = 5;                 ///< --prefixes: shared-prefix prefixes, few-shot tasks
  int prefix_len = 128;             ///< --prefix-len: prefix / instruction+examples / system
  double shared_fraction = 0.6;     ///< --shared-fraction (shared-prefix)
  int turns = 4;                    ///< --turns (multi-turn)
  double think_time = 1.0;          ///< --think-time: mean seconds (multi-turn)
  int max_conversation = 512;       ///< --max-conversation: worst-case tokens (multi-turn)
  int docs = 16;                    ///< --docs: RAG pool size
  int doc_len = 64;                 ///< --doc-len: tokens per RAG document
  int tenants = 1;                  ///< --tenants: requests go to t0..tN-1 (1: no tenant)
  int max_batched_tokens = 1024;    ///< --max-batched-tokens
  int max_seqs = 32;                ///< --max-seqs
  int default_requests_real = 64;   ///< --requests when not given, real clock
  int default_requests_sim = 400;   ///< --requests when not given, sim clock
  double default_rate_real = 0.0;   ///< --rate when not given, real clock (all at t = 0)
  double default_rate_sim = 40.0;   ///< --rate when not given, sim clock
};

/// @brief Registers the flags of @p f on @p app.
void add_serving_flags(CLI::App& app, ServingFlags& f);

/// @brief The requests a run serves and a one-line description of them.
struct Workload {
  std::vector<Request> requests;  ///< in arrival order
  std::string description;        ///< e.g. "64 requests, all arriving at t = 0, ..."
};

/// @brief Builds the workload the flags describe (reads --workload-file, or generates one with
/// the clock's defaults); every request samples with @p sampling (its own seed per request).
/// @throws inferlab::Error for a bad clock, distribution or file, or, with the real clock, an
/// arrival after kMaxRealClockWaitSeconds.
Workload make_workload(const ServingFlags& f, const SamplingParams& sampling);

/// @brief True for --clock sim (and checks the clock's name).
bool sim_clock(const ServingFlags& f);

/// @brief The latest arrival the real clock accepts, seconds: it really waits for each one.
inline constexpr double kMaxRealClockWaitSeconds = 3600.0;

/// @brief Checks, after parsing and before any work, the flags that only apply to one mode:
/// --hardware and --config only with --clock sim (whose names are checked here), the
/// generator's flags (--rate, --requests, --workload, ...) not with --workload-file, which must
/// be a regular file, and each workload kind's flags (--prefixes, --turns, --docs, ...) only
/// with that kind. @throws inferlab::Error naming the flag.
void check_serving_flags(const CLI::App& app, const ServingFlags& f);

/// @brief The flags that act only on the real clock's run, as mode rules for
/// refuse_inapplicable_flags(): --device, --threads, --weights, --reps and the sampling flags
/// (the simulated clock runs no model, and it is deterministic).
/// @param f the serving flags (their --clock)
/// @return one FlagScope per flag, applying when the clock is real
std::vector<FlagScope> real_clock_flag_scopes(const ServingFlags& f);

/// @brief The model side of a serving chapter, built before its run: on the real clock the
/// loaded model and an engine that runs it, on the simulated clock a tokenizer (to count the
/// tokens of text prompts; load_model_or_tokenizer()) and the simulated machine and model
/// (make_sim_engine()). Neither copied nor moved: the engine points into the loaded model.
struct ServedModel {
  LoadedModel loaded;    ///< the model (real clock) and its tokenizer (both clocks)
  ServingEngine engine;  ///< serves on the clock chosen: engine.sim is set on the simulated one

  /// @param s the serving flags (--clock, --config, --hardware)
  /// @param g the model flags (--model, --synthetic, --tokenizer, --device, ...)
  /// @param kv_type the KV storage type of every sequence
  /// @throws inferlab::Error as load_model() and make_sim_engine() do
  ServedModel(const ServingFlags& s, const GenerationFlags& g, DType kv_type);
  ServedModel(const ServedModel&) = delete;             ///< the engine points into `loaded`
  ServedModel& operator=(const ServedModel&) = delete;  ///< the engine points into `loaded`

  /// @brief The shape served: the simulated --config, or the loaded model's.
  const ModelConfig& config() const;
  /// @brief The name the chapters' JSON gives: the simulated --config or the model's own.
  /// @param s the serving flags the model was built with
  std::string name(const ServingFlags& s) const;
  /// @brief The name a plot's title gives: the simulated --config or title_model_name().
  /// @param s the serving flags the model was built with
  std::string plot_name(const ServingFlags& s) const;
};

/// @brief Prints a serving chapter's first line: `TITLE (simulated: CONFIG on HARDWARE)` on
/// the simulated clock, print_run_header() of `TITLE (real clock)` on the real one.
/// @param title e.g. "InferLab chapter 05: PagedAttention"
/// @param m the model served
/// @param g the model flags
/// @param s the serving flags
void print_serving_title(const std::string& title, const ServedModel& m, const GenerationFlags& g,
                         const ServingFlags& s);

/// @brief Checks every request of @p w against the context and vocabulary of @p served (text
/// prompts are tokenized with @p tokenizer), before the first step instead of when the engine
/// reaches it: each prompt (text, length or ids) must fit the context with ids in the
/// vocabulary, and a request that continues a conversation (Request::parent) must fit in the
/// worst case, its parent's whole prompt + the parent's max_tokens + its own prompt.
/// @throws inferlab::Error naming the workload file (or "the generated workload") and the request.
void check_workload_lengths(const Workload& w, const ServingFlags& f, const Tokenizer& tokenizer,
                            const ModelConfig& served);

/// @brief Checks a KV memory budget before any work: it must fit this machine's memory (the
/// real clock, @p sim null: require_allocation()) or one simulated device's (@p sim).
/// @param budget_bytes the budget
/// @param sim the simulated engine, or nullptr on the real clock
/// @param flag the flag that set it, for the message
/// @throws inferlab::Error naming @p flag and both sizes
void require_kv_budget(std::size_t budget_bytes, const SimEngine* sim, const std::string& flag);

/// @brief The simulated engine the flags describe (--config on --hardware).
SimEngine make_sim_engine(const ServingFlags& f, const LoadedModel& m);

/// @brief The scheduler limits the flags describe, with @p policy.
SchedulerConfig scheduler_config(const ServingFlags& f, Policy policy);

/// @brief One request's result as the serving chapters' JSON gives it: id, branch, tenant,
/// parent, arrival_s, prompt, prompt_tokens, tokens, generated_tokens, cached_tokens,
/// preemptions, stop_reason, text, ttft_s, tpot_s, e2e_s.
nlohmann::json request_json(const RequestResult& r);
/// @brief request_json() of every request of @p run, in (id, branch) order.
nlohmann::json requests_json(const EngineRun& run);

/// @brief "fits: needs ..." or "does not fit: ..." for the weights of @p engine's model (bf16)
/// plus a KV budget of @p kv_budget_bytes on one of its simulated devices.
std::string sim_memory_fit_line(const SimEngine& engine, std::size_t kv_budget_bytes);
/// @brief Prints sim_memory_fit_line() as the serving chapters' header line.
void print_sim_memory_fit(const SimEngine& engine, std::size_t kv_budget_bytes);

/// @brief Prints a table with one column per run: a header row (@p corner, then @p columns),
/// then each row's label and cells, right-aligned in columns of @p width characters.
void print_columns(const std::string& corner, const std::vector<std::string>& columns,
                   const std::vector<std::pair<std::string, std::vector<std::string>>>& rows,
                   int label_width, int width);

}  // namespace inferlab
