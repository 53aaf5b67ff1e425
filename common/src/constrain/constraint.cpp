// Front-end dispatch and the constrained generation loop (KV-cached, one token per step).
#include "inferlab/constrain/constraint.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/constrain/gbnf.hpp"
#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/regex.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/kv_cache.hpp"

namespace inferlab {

Grammar compile_constraint(ConstraintKind kind, const std::string& text, const std::string& source,
                           const JsonSchemaLimits& limits) {
  switch (kind) {
    case ConstraintKind::regex:
      try {
        return regex_grammar(text);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", source, e.what()));
      }
    case ConstraintKind::gbnf:
      return parse_gbnf(text, source);
    case ConstraintKind::json_mode:
      return json_mode_grammar(limits);
    case ConstraintKind::json_schema: {
      const nlohmann::ordered_json schema = parse_json_input(text, source);
      try {
        return json_schema_grammar(schema, limits);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", source, e.what()));
      }
    }
  }
  throw Error("unknown constraint kind");
}

ConstrainedResult generate_constrained(const Model& model, const Tokenizer& tokenizer,
                                       PushdownParser& parser, MaskComputer& masks,
                                       const std::vector<std::string>& token_bytes,
                                       const ConstrainedOptions& options) {
  options.sampling.validate();
  const int V = model.config().vocab_size;
  std::vector<int> history = tokenizer.encode(options.prompt, options.encoding);
  const int steps =
      options.steps <= 0 ? model.config().seq_len : std::min(options.steps, model.config().seq_len);
  if (static_cast<int>(history.size()) >= steps) {
    throw ParameterError("steps", fmt::format("{}: the prompt has {} tokens and does not fit",
                                              steps, history.size()));
  }
  ForwardPass pass(model);
  KVCache cache(model.config(), steps);
  std::vector<float> logits, masked(static_cast<std::size_t>(V)), probs;
  Sampler sampler(options.sampling, V);
  ConstrainedResult r;
  int state = parser.initial_state();
  pass.forward(history, 0, cache, LogitsMode::last, logits);
  for (int pos = static_cast<int>(history.size()); pos < steps; ++pos) {
    const auto t0 = std::chrono::steady_clock::now();
    const TokenMask* mask = state == PushdownParser::kDead ? nullptr : &masks.mask(state);
    r.mask_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    r.allowed.push_back(mask ? mask->count() : 0);
    // The mass the mask removes, measured on the model's own distribution (temperature 1).
    probs.assign(logits.begin(), logits.end());
    softmax_with_temperature(probs, 1.0f);
    double kept = 0.0;
    for (int t = 0; t < V; ++t) {
      if (mask && mask->allowed(t)) kept += probs[static_cast<std::size_t>(t)];
    }
    r.removed_mass.push_back(1.0 - kept);
    std::copy(logits.begin(), logits.end(), masked.begin());
    if (options.constrained) {
      if (!mask || mask->count() == 0) break;  // cannot happen for a trimmed grammar
      apply_token_mask(masked, *mask);
    }
    const int tok = sampler.sample(masked, history);
    r.tokens.push_back(tok);
    history.push_back(tok);
    if (tok == kEosToken || tok == kBosToken) {
      r.ended = true;
      r.valid = tok == kEosToken && parser.accepts(state);
      return r;
    }
    const std::string& bytes = token_bytes[static_cast<std::size_t>(tok)];
    r.text += bytes;
    if (state != PushdownParser::kDead) state = parser.advance(state, bytes);
    if (pos + 1 < steps)
      pass.forward(std::span<const int>(&history.back(), 1), pos, cache, LogitsMode::last, logits);
  }
  r.valid = parser.accepts(state);
  return r;
}

}  // namespace inferlab
