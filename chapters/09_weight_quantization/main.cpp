// Chapter 09: weight quantization.
//
// Loads one model in several weight formats (--weights of every chapter: f32, f16, q8_0, q4_0,
// ... and a GGUF file's own types), and measures each side by side: the bytes per weight and
// the model's bytes, decode at batch 1 and 16 and prefill in tokens/s, where each lands on
// this machine's roofline (--plot), and what the format costs in quality against float32 on
// the same text: KL divergence of the next-token distributions, top-1 agreement, perplexity,
// and the first position where greedy output departs. The core measures
// (analysis/format_compare.hpp, analysis/quant_quality.hpp); this file loads, prints and
// writes the JSON and the plot.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
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

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("--text {}: cannot read the file", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw Error(fmt::format("--text {}: the file is empty", path));
  return s.str();
}

// "same, 12, 0, same": per prompt, the first generated token that differs.
std::string divergence_text(const std::vector<int>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i)
    s += (i ? ", " : "") + (d[i] < 0 ? std::string("same") : std::to_string(d[i]));
  return s;
}

void print_results(const Options& o, const LoadedModel& ref,
                   const std::vector<FormatMeasurement>& runs,
                   const std::vector<std::string>& skipped, const std::string& text_source,
                   const Hardware* roof) {
  const ModelConfig& c = ref.model->config();
  std::printf("InferLab chapter 09: weight quantization\n");
  std::printf("model:   %s (dim %d, %d layers, vocabulary %d, %.1fM parameters)\n",
              ref.model->name().c_str(), c.dim, c.n_layers, c.vocab_size, c.n_params() / 1e6);
  std::printf("threads: %d; each time is the median of %d repetitions\n", omp_get_max_threads(),
              o.quick ? 1 : o.reps);
  std::printf("quality: against f32 on %s\n\n", text_source.c_str());
  std::printf("%-14s %6s %10s %10s %11s %10s | %9s %9s %7s %9s\n", "format", "bits/w", "MB",
              "decode t/s", "B=16 t/s", "prefill", "KL mean", "KL p99", "top-1", "ppl");
  for (const FormatMeasurement& m : runs) {
    std::printf("%-14s %6.2f %10.2f %10.1f %11.1f %10.1f | %9.5f %9.5f %6.1f%% %9.3f\n",
                m.name.c_str(), m.bits_per_weight, m.model_bytes / 1e6,
                m.points.batched[0].tokens_per_second(), m.points.batched[1].tokens_per_second(),
                m.points.prefill.tokens_per_second(), m.quality.kl_mean, m.quality.kl_p99,
                100.0 * m.quality.top1_agreement, m.quality.perplexity);
  }
  for (const std::string& why : skipped) std::printf("(not measured: %s)\n", why.c_str());
  std::printf(
      "\ngreedy divergence from f32, per prompt: the first generated token that differs (0 is "
      "the first)\n");
  for (const FormatMeasurement& m : runs)
    std::printf("  %-14s %s\n", m.name.c_str(), divergence_text(m.greedy_divergence).c_str());

  // The lesson: batch 1 follows the bytes, batch 16 less so.
  const FormatMeasurement& base = runs.front();
  std::printf("\nagainst %s: bytes read per token, and what each workload gained\n",
              base.name.c_str());
  std::printf("%-14s %10s %12s %12s %12s\n", "format", "bytes", "decode B=1", "decode B=16",
              "prefill");
  for (const FormatMeasurement& m : runs) {
    std::printf(
        "%-14s %9.2fx %11.2fx %11.2fx %11.2fx\n", m.name.c_str(), base.model_bytes / m.model_bytes,
        m.points.batched[0].tokens_per_second() / base.points.batched[0].tokens_per_second(),
        m.points.batched[1].tokens_per_second() / base.points.batched[1].tokens_per_second(),
        m.points.prefill.tokens_per_second() / base.points.prefill.tokens_per_second());
  }
  std::printf(
      "\nBatch-1 decode reads every weight once per token: its speed-up follows the bytes as long\n"
      "as unpacking a block costs less than reading it. At batch 16 each weight read serves 16\n"
      "tokens, the work moves toward compute, and the unpacking is paid 16 times over.\n");
  if (roof) {
    std::printf("\nroofline: %.1f GB/s, %.1f GFLOP/s (ridge %.1f FLOP/byte); plot written to %s\n",
                roof->bandwidth / 1e9, roof->peak_flops / 1e9, roof->ridge_point(), o.plot.c_str());
    for (const FormatMeasurement& m : runs)
      std::printf("  %-14s B=1: %6.2f FLOP/byte, %7.2f GB/s   B=16: %6.2f FLOP/byte\n",
                  m.name.c_str(), m.points.batched[0].intensity(),
                  m.points.batched[0].bytes_per_second() / 1e9, m.points.batched[1].intensity());
  }
  std::printf("\nNext: the exercises (14: Q8_0 blocks) write the format and its dot product.\n");
}

nlohmann::json to_json(const Options& o, const LoadedModel& ref,
                       const std::vector<FormatMeasurement>& runs,
                       const std::vector<std::string>& skipped, const std::string& source) {
  nlohmann::json out;
  out["chapter"] = "09_weight_quantization";
  out["model"] = ref.model->name();
  out["threads"] = omp_get_max_threads();
  out["reps"] = o.quick ? 1 : o.reps;
  out["text_source"] = source;
  out["skipped"] = skipped;
  out["formats"] = nlohmann::json::array();
  out["greedy_divergence"] = nlohmann::json::array();
  for (const FormatMeasurement& m : runs) {
    out["formats"].push_back({{"name", m.name},
                              {"bits_per_weight", m.bits_per_weight},
                              {"model_bytes", m.model_bytes},
                              {"decode_tokens_per_s", m.points.batched[0].tokens_per_second()},
                              {"batch16_tokens_per_s", m.points.batched[1].tokens_per_second()},
                              {"prefill_tokens_per_s", m.points.prefill.tokens_per_second()},
                              {"kl_mean", m.quality.kl_mean},
                              {"kl_p99", m.quality.kl_p99},
                              {"top1_agreement", m.quality.top1_agreement},
                              {"perplexity", m.quality.perplexity}});
    out["greedy_divergence"].push_back(
        {{"name", m.name}, {"first_divergence", m.greedy_divergence}});
  }
  return out;
}

int run(Options& o) {
  if (o.reps < 1) throw Error(fmt::format("--reps {} must be >= 1", o.reps));
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  const std::vector<std::string> names = chosen_formats(o);
  for (const std::string& n : names) parse_weight_format(n);  // a bad name fails before loading
  std::string text = o.text_file.empty() ? quality_text() : read_text(o.text_file);
  // --quick: the first paragraphs only (about 1,000 characters).
  if (o.quick && text.size() > 1000)
    text.resize(text.find(' ', 1000) == std::string::npos ? text.size() : text.find(' ', 1000));
  const std::string source = o.text_file.empty() ? quality_text_source() : o.text_file;

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
  const std::vector<FormatMeasurement> runs =
      compare_formats(*ref.model, formats, *ref.tokenizer, text, kv_quality_prompts(), co);

  std::optional<Hardware> roof;
  if (!o.plot.empty()) {
    progress("measuring this machine's roofs at " + std::to_string(omp_get_max_threads()) +
             " threads");
    MeasureOptions mo = o.quick ? quick_measure_options() : MeasureOptions{};
    mo.thread_counts = {omp_get_max_threads()};
    roof = measure_this_machine(mo).hardware;
    roofline_plot(*roof, format_roofline_points(runs),
                  fmt::format("Weight formats of {} on this machine's roofline",
                              std::filesystem::path(ref.model->name()).filename().string()))
        .save(o.plot);
  }
  if (o.json) {
    std::cout << to_json(o, ref, runs, skipped, source).dump(1) << '\n';
  } else {
    print_results(o, ref, runs, skipped, source, roof ? &*roof : nullptr);
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
  app.add_option("--plot", o.plot, "write the formats' points on this machine's roofline (SVG)");
  app.add_flag("--quick", o.quick, "smaller measurements (tests, CI)");
  app.add_flag("--json", o.json, "print one JSON object");
  set_parameter_flag("weights", "--formats");  // parse_weight_format() names `weights`
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
