// The autoregressive generation loop.
#include "inferlab/runtime/generate.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/base/timer.hpp"

namespace inferlab {

const char* generation_stop_name(GenerationStop reason) {
  switch (reason) {
    case GenerationStop::eos:
      return "eos";
    case GenerationStop::max_steps:
      return "max_steps";
    case GenerationStop::context:
      return "context";
  }
  return "unknown";
}

std::optional<GenerationStop> generation_stop(std::vector<int>& tokens, std::size_t appended,
                                              int steps, int seq_len,
                                              const std::function<bool(int)>& is_end) {
  const auto ends = [&](int token) { return is_end ? is_end(token) : token == kBosToken; };
  const auto end = std::find_if(tokens.end() - std::ptrdiff_t(appended), tokens.end(), ends);
  if (end != tokens.end()) {  // the model's end-of-text signal
    tokens.erase(end + 1, tokens.end());
    return GenerationStop::eos;
  }
  if (tokens.size() < std::size_t(steps) + 1) return std::nullopt;
  // The context is the hard limit; --steps below it is the user's.
  return steps == seq_len ? GenerationStop::context : GenerationStop::max_steps;
}

GenerationResult generate(const Model& model, const Tokenizer& tokenizer,
                          const GenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text) {
  const ModelConfig& c = model.config();
  if (tokenizer.vocab_size() != c.vocab_size) {
    throw Error(fmt::format("tokenizer has {} pieces but the model's vocabulary is {}",
                            tokenizer.vocab_size(), c.vocab_size));
  }
  if (options.steps < 0) throw Error(fmt::format("steps = {} (must be >= 0)", options.steps));
  const int steps = options.steps == 0 || options.steps > c.seq_len ? c.seq_len : options.steps;
  Sampler sampler(options.sampling, c.vocab_size);  // validates the parameters

  GenerationResult r;
  r.timeline.arrival = now_seconds();
  r.prompt_tokens = tokenizer.encode(options.prompt, options.encoding);
  if (r.prompt_tokens.empty()) throw Error("the prompt is empty: nothing to generate from");
  const int P = static_cast<int>(r.prompt_tokens.size());
  if (P > steps) {
    throw ParameterError(
        "steps", fmt::format("{}: the prompt is {} tokens (BOS included) but only {} positions "
                             "are allowed (context {}): shorten the prompt or raise it",
                             options.steps, P, steps, c.seq_len));
  }

  std::vector<int>& seq = r.tokens;
  seq = r.prompt_tokens;
  StreamDecoder printer(tokenizer);
  auto emit = [&](std::size_t i) {  // print seq[i], which follows seq[i - 1]
    const std::string piece = printer.push(i > 0 ? seq[i - 1] : -1, seq[i]);
    if (piece.empty()) return;
    r.text += piece;
    if (on_text) on_text(piece);
  };
  if (options.echo_prompt)
    for (int i = 0; i < P; ++i) emit(i);  // the prompt is echoed, as the reference does

  const bool cached = options.loop == LoopKind::cached;
  // The device's runner and one contiguous cache on it, sized for every position forwarded.
  std::unique_ptr<ModelRunner> runner = make_runner(model, options.device);
  KVCache cache = make_cache(*runner, steps, options.kv_type);
  r.kv_bytes_per_token = cache.bytes_per_token();
  std::vector<float> logits;
  // Plain greedy decoding needs only each step's argmax, which the runner takes where the
  // logits are: on a GPU only the token id crosses to the host. Penalties and kept logits need
  // the logits themselves on the host.
  const SamplingParams& sp = options.sampling;
  const bool argmax_only = sp.argmax_only() && !options.keep_logits;
  std::vector<int> chosen;  // (1) step_greedy's token
  int forwarded = 0;        // positions whose logits have been computed
  while (true) {
    const bool prefill = forwarded == 0;
    const int n = prefill ? P : forwarded + 1;  // the sequence this step produces logits for
    // Both loops start alike: the whole prompt in one forward (the prefill phase). After it the
    // cached loop forwards only the newest token; the naive loop re-processes all n.
    const int from = prefill || !cached ? 0 : forwarded;
    const bool all_rows = prefill && options.keep_logits;
    const double t0 = now_seconds();
    if (from == 0) cache.clear();  // the naive loop remembers nothing between steps
    const std::span<const int> chunk(seq.data() + from, n - from);
    if (argmax_only) {
      const BatchEntry entry{chunk, from, &cache};
      runner->step_greedy(std::span<const BatchEntry>(&entry, 1), chosen);
    } else {
      run_sequence(*runner, chunk, from, cache, all_rows ? LogitsMode::all : LogitsMode::last,
                   logits);
    }
    const double t1 = now_seconds();
    r.steps.push_back({n - 1, n - from, t1 - t0, prefill});
    forwarded = n;
    if (options.keep_logits) {
      const int rows = static_cast<int>(logits.size() / c.vocab_size);
      for (int i = 0; i < rows; ++i)
        r.logits.emplace_back(logits.begin() + std::ptrdiff_t(i) * c.vocab_size,
                              logits.begin() + std::ptrdiff_t(i + 1) * c.vocab_size);
    }
    int next = 0;
    if (argmax_only) {
      next = chosen[0];
    } else {
      const std::span<const float> last(logits.data() + logits.size() - c.vocab_size, c.vocab_size);
      next = sampler.sample(last, seq);
    }
    seq.push_back(next);
    r.timeline.token_times.push_back(now_seconds());
    // seq holds forwarded + 1 tokens: the rule stops once `steps` positions are forwarded.
    const std::optional<GenerationStop> stop =
        generation_stop(seq, 1, steps, c.seq_len, [&](int token) {
          return tokenizer.is_end_of_generation(token) ||
                 std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) !=
                     options.stop_tokens.end();
        });
    if (stop != GenerationStop::eos) emit(seq.size() - 1);
    if (stop) {
      r.stop_reason = *stop;
      break;
    }
  }
  const std::string tail = printer.flush();
  if (!tail.empty()) {
    r.text += tail;
    if (on_text) on_text(tail);
  }
  r.metrics = request_metrics(r.timeline);
  if (cached) r.kv_bytes_in_use = r.kv_bytes_per_token * std::size_t(forwarded);
  return r;
}

}  // namespace inferlab
