// Chapter 09: weight quantization.
//
// Loads one model in several weight formats (--weights of every chapter: f32, f16, q8_0, q4_0,
// ... and a GGUF file's own types), and measures each side by side: the bytes per weight and
// the model's bytes, decode at batch 1 and 16 and prefill in tokens/s, where each lands on
// this machine's roofline (--plot), and what the format costs in quality against float32 on
// the same text: KL divergence of the next-token distributions, top-1 agreement, perplexity,
// and the first position where greedy output departs. The core measures
// (analysis/format_compare.hpp, analysis/quant_quality.hpp) and prints (app/quant_report.hpp);
// this file loads the models and draws the plot.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/analysis/format_compare.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/loop_compare.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/plots.hpp"
#include "inferlab/app/quant_report.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/model/weight_format.hpp"

using namespace inferlab;

namespace {

struct Options {
  GenerationFlags model;  // --model, --synthetic, --tokenizer, --threads (weights set per format)
  std::vector<std::string> formats;
  std::string text_file;
  std::string plot;
  int reps = 5;
  int ppl_chunk = 0;  // > 0: llama-perplexity's chunks instead of windows
  bool quick = false;
  bool json = false;
};

void progress(const std::string& line) {
  std::fprintf(stderr, "[ch09] %s\n", line.c_str());
  std::fflush(stderr);
}

// The formats to compare: --formats, else F32, F16, Q8_0, Q4_0, and a GGUF file's own types.
std::vector<std::string> chosen_formats(const Options& o) {
  if (!o.formats.empty()) return o.formats;
  std::vector<std::string> f{"f32", "f16", "q8_0", "q4_0"};
  if (o.model.synthetic.empty() && GgufFile::has_magic(find_model(o.model.model)))
    f.push_back("file");
  return f;
}

// Why @p format cannot store a model of shape @p c ("" when it can): a block format needs every
// row (D numbers, or H for the down projection) to be whole blocks. llama.cpp falls back to
// another type for such tensors; here the format is left out of the comparison, and said so.
std::string format_misfit(const ModelConfig& c, WeightFormat format) {
  const std::optional<kernels::TensorType> type = weight_format_type(format);
  if (!type) return "";
  const int block = int(kernels::block_elements(*type));
  for (int n : {c.dim, c.hidden_dim}) {
    if (n % block != 0) {
      return fmt::format("rows of {} numbers are not whole {}-number blocks", n, block);
    }
  }
  return "";
}

int run(Options& o) {
  if (o.reps < 1) throw Error(fmt::format("--reps {} must be >= 1", o.reps));
  if (o.ppl_chunk != 0 && o.ppl_chunk < 3)
    throw Error(fmt::format("--ppl-chunk {}: must be 0 (windows) or >= 3 tokens", o.ppl_chunk));
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  const std::vector<std::string> names = chosen_formats(o);
  for (const std::string& n : names) parse_weight_format(n);  // a bad name fails before loading
  const QualityInput quality = quality_input(o.text_file, o.quick, o.ppl_chunk);

  // The reference, then one model per format (all held at once: the quality measure runs the
  // text through every one of them window by window).
  GenerationFlags flags = o.model;
  flags.weights = "f32";
  progress("loading the f32 reference");
  const LoadedModel ref = load_model(flags);
  std::vector<std::string> skipped;
  std::vector<LoadedModel> loaded;
  std::vector<std::string> kept;
  for (const std::string& n : names) {
    const std::string why = format_misfit(ref.model->config(), parse_weight_format(n));
    if (!why.empty()) {
      skipped.push_back(n + ": " + why);
      continue;
    }
    flags.weights = n;
    progress("loading " + n);
    loaded.push_back(load_model(flags));
    kept.push_back(n);
  }
  for (const std::string& s : skipped) progress("skipped " + s);
  if (kept.empty()) throw Error("none of the formats can store this model (see above)");
  std::vector<FormatModel> formats;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    formats.push_back({kept[i], &*loaded[i].model});
    if (kept[i] == "file" && !o.json) progress("file: " + loaded[i].model->load_note());
  }

  FormatCompareOptions co;
  co.progress = progress;
  co.speed.reps = o.quick ? 1 : o.reps;
  if (o.quick) {
    co.speed.prompt_tokens = 32;
    co.speed.decode_steps = 4;
    co.window = 64;
    co.greedy_steps = 16;
  } else {
    co.speed.prompt_tokens = std::min(128, ref.model->config().seq_len / 2);
    co.speed.decode_steps = 8;
  }
  co.window = std::min(co.window, ref.model->config().seq_len + 1);
  co.ppl_chunk = o.ppl_chunk;
  FormatReport report{&*ref.model, omp_get_max_threads(), o.quick ? 1 : o.reps, quality.source,
                      compare_formats(*ref.model, formats, *ref.tokenizer, quality.text,
                                      kv_quality_prompts(), co),
                      skipped};

  std::optional<Hardware> roof;
  if (!o.plot.empty()) {
    progress("measuring this machine's roofs at " + std::to_string(omp_get_max_threads()) +
             " threads");
    MeasureOptions mo = o.quick ? quick_measure_options() : MeasureOptions{};
    mo.thread_counts = {omp_get_max_threads()};
    roof = measure_this_machine(mo).hardware;
    roofline_plot(*roof, format_roofline_points(report.runs),
                  fmt::format("Weight formats of {} on this machine's roofline",
                              std::filesystem::path(ref.model->name()).filename().string()))
        .save(o.plot);
  }
  if (o.json) {
    std::cout << format_report_json(report).dump(1) << '\n';
  } else {
    print_format_report(report, roof ? &*roof : nullptr, o.plot);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "InferLab chapter 09: weight quantization (one model in several formats: bytes, speed on "
      "the roofline, quality against float32)"};
  Options o;
  app.add_option("--model", o.model.model,
                 "a GGUF or llama2.c model file, or a short name (default: stories260K)");
  app.add_option("--synthetic", o.model.synthetic, "random weights of this named shape instead");
  app.add_option("--tokenizer", o.model.tokenizer, "tokenizer file (default: the model's own)");
  app.add_option("--formats", o.formats,
                 "weight formats to compare (default: f32 f16 q8_0 q4_0, and file for a GGUF "
                 "file): " +
                     fmt::format("{}", fmt::join(weight_format_names(), ", ")))
      ->delimiter(',');
  app.add_option("--threads", o.model.threads, "CPU threads (0 = OpenMP default)")
      ->check(thread_count());
  app.add_option("--reps", o.reps, "repetitions of each timed workload (the median counts)")
      ->capture_default_str();
  app.add_option("--text", o.text_file,
                 "text of the perplexity and KL measures (default: the built-in public-domain "
                 "text, Pride and Prejudice chapter 1)");
  app.add_option("--ppl-chunk", o.ppl_chunk,
                 "score the text as llama-perplexity -c N does: chunks of N tokens, the second "
                 "half of each scored (default 0: windows of 256 tokens, every token scored)");
  app.add_option("--plot", o.plot, "write the formats' points on this machine's roofline (SVG)");
  app.add_flag("--quick", o.quick, "smaller measurements (tests, CI)");
  app.add_flag("--json", o.json, "print one JSON object");
  set_parameter_flag("weights", "--formats");  // parse_weight_format() names `weights`
  set_parameter_flag("chunk", "--ppl-chunk");   // compare_quality_chunks() names `chunk`
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
