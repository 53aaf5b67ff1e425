#pragma once
/// @file chapter_cli.hpp
/// @brief What every generating chapter shares on its command line: the model and sampling
/// flags, loading, the run header, the `--json` contract and the `--dump-logits` format.
/// Chapters stay thin by calling these instead of repeating them.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "inferlab/runtime/generate.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief The flags that choose and drive a generation.
struct GenerationFlags {
  std::string model;      ///< --model: path or file name (found via model_files.hpp)
  std::string tokenizer;  ///< --tokenizer: path; default matches the vocabulary
  std::string synthetic;  ///< --synthetic: a named shape with random weights instead of a file
  std::string prompt = "Once upon a time";  ///< --prompt
  bool parse_special = false;  ///< --parse-special: special-token text in the prompt is its token
  bool no_bos = false;         ///< --no-bos: do not prepend BOS to the prompt
  int steps = 256;             ///< --steps: positions to forward, prompt included (llama2.c's -n)
  int threads = 0;             ///< --threads: 0 = OpenMP's default
  std::string device = "cpu";  ///< --device: cpu or cuda
  std::string weights = "file";  ///< --weights: storage of the weights (weight_format.hpp)
  bool json = false;           ///< --json: one JSON object instead of streamed text
  std::string dump_logits;     ///< --dump-logits: path of the `pos token logit...` file
  SamplingParams sampling;     ///< --temperature, --top-k, ... --seed
};

/// @brief A chapter's main() after its flags are declared: parses the command line (printing
/// --help or a usage error as CLI11 does), then calls @p run; an exception becomes
/// `error: <message>` on stderr and exit code 1, so bad input never crashes a chapter.
int run_chapter(CLI::App& app, int argc, char** argv, const std::function<int()>& run);

/// @brief Registers the flags of @p f on @p app (names and help shared by every chapter).
void add_generation_flags(CLI::App& app, GenerationFlags& f);

/// @brief Removes the single-prompt flags (`--prompt`, `--steps`, `--parse-special`,
/// `--no-bos`) from @p app: a chapter that serves a workload does not accept them, rather than
/// ignoring them.
void remove_prompt_flags(CLI::App& app);

/// @brief A loaded model with its tokenizer.
struct LoadedModel {
  std::optional<Model>
      model;  ///< set after load_model() (load_model_or_tokenizer may leave it unset)
  std::optional<Tokenizer> tokenizer;  ///< always set after load_model()
  std::string tokenizer_source;        ///< its file, or "synthetic"
};

/// @brief The generation options the flags describe (prompt, steps, sampling, device); the
/// chapter sets the loop kind and its own extras.
GenerateOptions generate_options(const GenerationFlags& f);

/// @brief Checks the sampling flags and --device (a clear error for CUDA on a build or machine
/// without it), applies --threads, then loads the model (file or synthetic) and its tokenizer (the
/// file matching the vocabulary, or a generated one when none is found for a synthetic model).
/// @throws inferlab::Error with the message of the failing step.
LoadedModel load_model(const GenerationFlags& f);

/// @brief For a simulated clock, which needs only a tokenizer (to count the tokens of text
/// prompts): loads like load_model() when --model or --synthetic is given or the default model
/// file is found; otherwise leaves `model` unset and takes the tokenizer of the default model's
/// 512-piece vocabulary (--tokenizer, else tok512.bin in the search path, else the built-in
/// synthetic one), so that a simulation runs without any file.
/// @param f the chapter's flags
/// @return the model (possibly unset) and its tokenizer (always set)
/// @throws inferlab::Error as load_model() does.
LoadedModel load_model_or_tokenizer(const GenerationFlags& f);

/// @brief The text stream of a generating chapter, to pass to generate() as its `on_text`:
/// writes each piece to stdout as it comes (flushed, so the text appears token by token), or
/// nothing under --json, whose object carries the text instead.
std::function<void(std::string_view)> stdout_text_stream(const GenerationFlags& f);

/// @brief Prints what a chapter runs on: model and its shape, tokenizer, device, threads,
/// sampling parameters, then @p extra (a chapter's own line) if not empty.
void print_run_header(const char* title, const LoadedModel& m, const GenerationFlags& f,
                      const std::string& extra = "");

/// @brief The `--json` contract every chapter keeps: chapter, model, tokenizer, device, threads,
/// prompt, prompt_tokens, tokens (BOS, prompt, generated), generated_tokens, text, stop_reason
/// ("eos", "max_steps" or "context"), metrics
/// (ttft_s, tpot_s, e2e_s, output_tokens, throughput_tokens_per_s, itl_s summary, prefill_s,
/// decode_forward_s) and steps. Chapters add their own keys to the returned object.
nlohmann::json generation_json(const char* chapter, const LoadedModel& m, const GenerationFlags& f,
                               const GenerationResult& r);

/// @brief Writes `pos token logit_0 ... logit_{V-1}` rows (the reference logits file's format)
/// for every forwarded position. @throws inferlab::Error if the file cannot be written.
void write_logits_file(const std::string& path, const GenerationResult& r);

/// @brief Prints, under a timed table, how far its numbers can be trusted: the median of how many
/// repetitions, the widest spread ((max - min) / median) of any row, and, when there was one
/// sample or the spread passed 10%, how to get stable numbers (--threads 1, more --reps).
/// @param reps repetitions behind each number (1 = single samples)
/// @param max_spread the largest (max - min) / median over the table's rows
void print_timing_noise(int reps, double max_spread);

/// @brief Prints why @p r stopped (`stop_reason`: eos, max_steps or context) and at which
/// position, in one line.
/// @param r a finished generation
void print_stop_reason(const GenerationResult& r);

/// @brief Prints the prompt/generation split, the latency metrics and the stop reason of @p r.
void print_generation_metrics(const GenerationResult& r);

}  // namespace inferlab
