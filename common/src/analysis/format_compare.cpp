// One model in several weight formats, side by side: bytes, speed on the roofline, quality.
#include "inferlab/analysis/format_compare.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/generate.hpp"

namespace inferlab {

double stored_weight_bytes(const Model& model) {
  const ModelConfig& c = model.config();
  const CpuLinears& linears = model.cpu_linears();
  double bytes = double(linears.bytes());
  if (!c.shared_classifier) bytes += double(linears.wcls.bytes());
  // The norms stay float32: two per layer and the final one.
  bytes += (2.0 * c.n_layers + 1.0) * c.dim * sizeof(float);
  return bytes;
}

namespace {

// The greedy continuation of @p prompt: up to @p new_tokens tokens after it (fewer when the
// context ends first or the model ends the text).
std::vector<int> greedy_tokens(const Model& model, const Tokenizer& tokenizer,
                               const std::string& prompt, int new_tokens) {
  const int prompt_tokens = int(tokenizer.encode(prompt, tokenizer.adds_bos()).size());
  GenerateOptions o;
  o.prompt = prompt;
  o.steps = std::min(model.config().seq_len, prompt_tokens + new_tokens);
  o.sampling.temperature = 0.0f;
  o.loop = LoopKind::cached;
  const GenerationResult r = generate(model, tokenizer, o);
  return std::vector<int>(r.tokens.begin() + long(r.prompt_tokens.size()), r.tokens.end());
}

}  // namespace

std::vector<FormatMeasurement> compare_formats(const Model& reference,
                                               std::span<const FormatModel> formats,
                                               const Tokenizer& tokenizer, const std::string& text,
                                               const std::vector<std::string>& prompts,
                                               const FormatCompareOptions& options) {
  const ModelConfig& c = reference.config();
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  std::vector<FormatMeasurement> out;
  std::vector<const Model*> models;
  for (const FormatModel& f : formats) {
    FormatMeasurement m;
    m.name = f.name;
    m.model_bytes = stored_weight_bytes(*f.model);
    m.bits_per_weight = 8.0 * m.model_bytes / double(c.n_params());
    ModelPointOptions speed = options.speed;
    speed.progress = [&](const std::string& line) { progress(f.name + ": " + line); };
    m.points = measure_model_points(*f.model, speed);  // bytes as stored in this format
    out.push_back(std::move(m));
    models.push_back(f.model);
  }

  progress(fmt::format("quality: next-token distributions on {} characters of text", text.size()));
  const std::vector<int> tokens = tokenizer.encode(text, false);
  const int window = std::min(options.window, c.seq_len + 1);
  // Every window starts as the model's prompts do: with BOS when its tokenizer adds one (as
  // llama-perplexity does), else with the token before the window's run.
  const int bos = tokenizer.adds_bos() ? tokenizer.bos_id() : -1;
  const std::vector<QualityStats> quality =
      options.ppl_chunk > 0
          ? compare_quality_chunks(reference, models, tokens, bos, options.ppl_chunk)
          : compare_quality(reference, models, tokens, bos, window);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].quality = quality[i];

  progress(fmt::format("greedy generations of {} prompts", prompts.size()));
  for (const std::string& prompt : prompts) {
    // An empty prompt is a prompt only with BOS; without one there is nothing to continue.
    if (tokenizer.encode(prompt, tokenizer.adds_bos()).empty()) continue;
    const std::vector<int> ref = greedy_tokens(reference, tokenizer, prompt, options.greedy_steps);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::vector<int> got =
          greedy_tokens(*formats[i].model, tokenizer, prompt, options.greedy_steps);
      out[i].greedy_divergence.push_back(first_divergence(ref, got));
    }
  }
  return out;
}

std::vector<RooflinePoint> format_roofline_points(const std::vector<FormatMeasurement>& runs) {
  std::vector<RooflinePoint> points;
  for (const FormatMeasurement& m : runs) {
    for (const ModelPoint& p : m.points.batched) {
      points.push_back(
          {fmt::format("{} B={}", m.name, p.tokens), p.intensity(), p.flops_per_second(), true});
    }
  }
  return points;
}

}  // namespace inferlab
