#pragma once
/// @file quant_report.hpp
/// @brief Chapter 09's output: the weight formats' measurements (analysis/format_compare.hpp)
/// as text tables or as the `--json` object. Field names are a contract read outside the
/// repository: they change only with the chapter's documentation.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/analysis/format_compare.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief What chapter 09 measured, and on what.
struct FormatReport {
  const Model* reference = nullptr;     ///< the float32 model the formats are compared with
  int threads = 1;                      ///< CPU threads every time was taken on
  int reps = 1;                         ///< repetitions behind each median
  std::string text_source;              ///< where the quality text comes from
  std::vector<FormatMeasurement> runs;  ///< one per format measured, the first the baseline
  std::vector<std::string> skipped;     ///< "format: why" for each format left out
};

/// @brief The text chapter 09 measures quality on, and how its report names it.
struct QualityInput {
  std::string text;    ///< the characters to tokenize
  std::string source;  ///< the report's text_source
};

/// @brief The built-in public-domain text (quality_text()), or the regular file @p text_file;
/// with @p quick only its first paragraphs (about 1,000 characters). The source names the file
/// or the built-in text's edition, and llama-perplexity's chunks when @p ppl_chunk > 0.
/// @throws inferlab::Error naming `--text` for a file that cannot be read, is larger than
/// 64 MiB or is empty.
QualityInput quality_input(const std::string& text_file, bool quick, int ppl_chunk);

/// @brief Prints the report: per format bytes, speeds and quality, the greedy divergence, the
/// speed-ups against the first format, and, when @p roof is given, each format's roofline point.
/// @param report the measurements (at least one run)
/// @param roof this machine's measured roofs, or nullptr when no plot was drawn
/// @param plot the file the roofline plot was written to (printed with @p roof)
void print_format_report(const FormatReport& report, const Hardware* roof,
                         const std::string& plot);

/// @brief The `--json` object: chapter, model, threads, reps, text_source, skipped, `formats`
/// (name, bits_per_weight, model_bytes, decode_tokens_per_s, batch16_tokens_per_s,
/// prefill_tokens_per_s, kl_mean, kl_p99, top1_agreement, perplexity) and greedy_divergence.
/// @param report the measurements
/// @return the object
nlohmann::json format_report_json(const FormatReport& report);

}  // namespace inferlab
