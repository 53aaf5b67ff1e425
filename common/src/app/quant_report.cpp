// Chapter 09's tables and JSON (see quant_report.hpp).
#include "inferlab/app/quant_report.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inferlab/analysis/quant_quality.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

namespace {

// "same, 12, 0, same": per prompt, the first generated token that differs.
std::string divergence_text(const std::vector<int>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i)
    s += (i ? ", " : "") + (d[i] < 0 ? std::string("same") : std::to_string(d[i]));
  return s;
}

}  // namespace

QualityInput quality_input(const std::string& text_file, bool quick, int ppl_chunk) {
  QualityInput in;
  if (text_file.empty()) {
    in.text = quality_text();
    in.source = quality_text_source();
  } else {
    in.text = read_regular_file(text_file, "--text", std::size_t{64} << 20);
    if (in.text.empty()) throw Error(fmt::format("--text {}: the file is empty", text_file));
    in.source = text_file;
  }
  if (quick && in.text.size() > 1000) {  // the first paragraphs only
    const std::size_t cut = in.text.find(' ', 1000);
    if (cut != std::string::npos) in.text.resize(cut);
  }
  if (ppl_chunk > 0)
    in.source += fmt::format(" (llama-perplexity's chunks of {} tokens)", ppl_chunk);
  return in;
}

void print_format_report(const FormatReport& report, const Hardware* roof,
                         const std::string& plot) {
  const std::vector<FormatMeasurement>& runs = report.runs;
  const ModelConfig& c = report.reference->config();
  std::printf("InferLab chapter 09: weight quantization\n");
  std::printf("model:   %s (dim %d, %d layers, vocabulary %d, %.1fM parameters)\n",
              report.reference->name().c_str(), c.dim, c.n_layers, c.vocab_size,
              c.n_params() / 1e6);
  std::printf("threads: %d; each time is the median of %d repetitions\n", report.threads,
              report.reps);
  std::printf("quality: against f32 on %s\n\n", report.text_source.c_str());
  std::printf("%-14s %6s %10s %10s %11s %10s | %9s %9s %7s %9s\n", "format", "bits/w", "MB",
              "decode t/s", "B=16 t/s", "prefill", "KL mean", "KL p99", "top-1", "ppl");
  for (const FormatMeasurement& m : runs) {
    std::printf("%-14s %6.2f %10.2f %10.1f %11.1f %10.1f | %9.5f %9.5f %6.1f%% %9.3f\n",
                m.name.c_str(), m.bits_per_weight, m.model_bytes / 1e6,
                m.points.batched[0].tokens_per_second(), m.points.batched[1].tokens_per_second(),
                m.points.prefill.tokens_per_second(), m.quality.kl_mean, m.quality.kl_p99,
                100.0 * m.quality.top1_agreement, m.quality.perplexity);
  }
  for (const std::string& why : report.skipped) std::printf("(not measured: %s)\n", why.c_str());
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
                roof->bandwidth / 1e9, roof->peak_flops / 1e9, roof->ridge_point(), plot.c_str());
    for (const FormatMeasurement& m : runs)
      std::printf("  %-14s B=1: %6.2f FLOP/byte, %7.2f GB/s   B=16: %6.2f FLOP/byte\n",
                  m.name.c_str(), m.points.batched[0].intensity(),
                  m.points.batched[0].bytes_per_second() / 1e9, m.points.batched[1].intensity());
  }
  std::printf("\nNext: the exercises (14: Q8_0 blocks) write the format and its dot product.\n");
}

nlohmann::json format_report_json(const FormatReport& report) {
  nlohmann::json out;
  out["chapter"] = "09_weight_quantization";
  out["model"] = report.reference->name();
  out["threads"] = report.threads;
  out["reps"] = report.reps;
  out["text_source"] = report.text_source;
  out["skipped"] = report.skipped;
  out["formats"] = nlohmann::json::array();
  out["greedy_divergence"] = nlohmann::json::array();
  for (const FormatMeasurement& m : report.runs) {
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

}  // namespace inferlab
