// The speculative decoding loop, and plain decoding through the same model adaptor.
#include "inferlab/runtime/speculative_decoder.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/runtime/generate.hpp"

namespace inferlab {

double SpecStats::acceptance_rate() const {
  const long tried = accepted + rejections;
  return tried > 0 ? double(accepted) / double(tried) : 0.0;
}

double SpecStats::mean_accepted_per_round() const {
  return rounds > 0 ? double(accepted) / double(rounds) : 0.0;
}

double SpecStats::acceptance_at(int depth) const {
  if (depth < 0 || depth >= static_cast<int>(tried_at.size()) || tried_at[std::size_t(depth)] == 0)
    return 0.0;
  return double(accepted_at[std::size_t(depth)]) / double(tried_at[std::size_t(depth)]);
}

SpeculativeDecoder::SpeculativeDecoder(SpecModel& target, Proposer& proposer,
                                       const SamplingParams& sampling)
    : target_(&target),
      proposer_(&proposer),
      sampler_(sampling, target.config().vocab_size),
      rng_(sampling.seed),
      greedy_(sampling.greedy()) {
  if (const SpecModel* draft = proposer.draft_model()) {
    if (draft->config().vocab_size != target.config().vocab_size) {
      throw Error(fmt::format(
          "the draft model's vocabulary ({} tokens, {}) differs from the target's ({} tokens, {})",
          draft->config().vocab_size, draft->name(), target.config().vocab_size, target.name()));
    }
  }
}

int SpeculativeDecoder::round(std::vector<int>& context, int max_positions) {
  const int n_ctx = static_cast<int>(context.size());
  if (n_ctx == 0) throw Error("speculative round: empty context");
  if (n_ctx > max_positions || max_positions > target_->capacity()) {
    throw Error(fmt::format("speculative round: context {} and limit {} (capacity {})", n_ctx,
                            max_positions, target_->capacity()));
  }
  const int V = target_->config().vocab_size;

  // 1. Propose.
  const long draft_calls = proposer_->draft_model() ? proposer_->draft_model()->calls() : 0;
  const double t0 = now_seconds();
  proposer_->propose(context, max_positions - n_ctx, tree_);
  const double t1 = now_seconds();
  if (proposer_->draft_model())
    stats_.draft_forwards += proposer_->draft_model()->calls() - draft_calls;
  const int n = tree_.size();

  // 2. One target forward: the context's unforwarded tail (its last token at least), then the
  // draft nodes at rows n_ctx, n_ctx + 1, ...
  const int held = target_->resume_point(context);
  chunk_.assign(context.begin() + held, context.end());
  chunk_.insert(chunk_.end(), tree_.tokens.begin(), tree_.tokens.end());
  const int tail = n_ctx - held;
  const double f0 = now_seconds();
  if (tree_.is_chain()) {
    target_->forward(chunk_, LogitsMode::all, logits_);
  } else {
    tree_parents_.clear();
    for (int parent : tree_.parents) tree_parents_.push_back(parent < 0 ? -1 : n_ctx + parent);
    const TreeMask mask{n_ctx, tree_parents_};
    target_->forward(chunk_, LogitsMode::all, logits_, &mask);
  }
  stats_.target_forward_seconds += now_seconds() - f0;

  // p after the context (row tail - 1) and after each node (row tail + i), each with the
  // history its sampler would see: the context, then the node's path.
  p_.resize(std::size_t(n + 1) * V);
  for (int i = -1; i < n; ++i) {
    history_.assign(context.begin(), context.end());
    const std::size_t path_start = history_.size();
    for (int a = i; a >= 0; a = tree_.parents[std::size_t(a)])
      history_.push_back(tree_.tokens[std::size_t(a)]);
    std::reverse(history_.begin() + std::ptrdiff_t(path_start), history_.end());
    const std::span<const float> row(logits_.data() + std::size_t(tail + i) * V, std::size_t(V));
    const std::vector<float> dist = sampler_.distribution(row, history_);
    std::copy(dist.begin(), dist.end(), p_.begin() + std::ptrdiff_t(i + 1) * V);
  }

  // 3. Verify.
  const Verdict verdict = verify_draft(tree_, p_, greedy_, rng_);

  // 4. Roll back to the accepted path: the target keeps the context and the accepted nodes.
  std::vector<int> kept;
  for (int node : verdict.path) kept.push_back(n_ctx + node);
  target_->keep_rows(n_ctx, kept);
  for (int node : verdict.path) context.push_back(tree_.tokens[std::size_t(node)]);
  context.push_back(verdict.next_token);
  stats_.verify_seconds += now_seconds() - t1;
  stats_.draft_seconds += t1 - t0;

  // Statistics: which depths had a guess to try, and which were accepted.
  const int m = static_cast<int>(verdict.path.size());
  ++stats_.rounds;
  stats_.proposed += n;
  stats_.accepted += m;
  stats_.emitted += m + 1;
  const int depth_tried = [&] {  // depth of the last position tried (m if it had children)
    const int last = m == 0 ? -1 : verdict.path.back();
    const bool has_children =
        std::find(tree_.parents.begin(), tree_.parents.end(), last) != tree_.parents.end();
    return has_children ? m : m - 1;
  }();
  if (depth_tried >= static_cast<int>(stats_.tried_at.size())) {
    stats_.tried_at.resize(std::size_t(depth_tried) + 1, 0);
    stats_.accepted_at.resize(std::size_t(depth_tried) + 1, 0);
  }
  for (int d = 0; d <= depth_tried; ++d) ++stats_.tried_at[std::size_t(d)];
  for (int d = 0; d < m; ++d) ++stats_.accepted_at[std::size_t(d)];
  if (depth_tried == m) ++stats_.rejections;  // the guesses at depth m were all rejected
  return m + 1;
}

namespace {

void check_generation(const SpecModel& target, std::span<const int> prompt, int steps) {
  if (prompt.empty()) throw Error("generation: the prompt must hold at least BOS");
  if (steps < static_cast<int>(prompt.size()) || steps > target.capacity()) {
    throw Error(fmt::format(
        "generation: {} steps for a prompt of {} tokens and a context of {} (need prompt <= "
        "steps <= context)",
        steps, prompt.size(), target.capacity()));
  }
}

// Prefills everything but the prompt's last token (the first round or step forwards it); the
// decode counters start after it.
void prefill_target(SpecModel& target, std::span<const int> prompt) {
  target.prefill(prompt);
  target.reset_counters();
}

// generate()'s stopping rule after a round or step that appended `appended` tokens.
bool finished(const SpecModel& target, std::vector<int>& tokens, int appended, int steps,
              std::span<const int> end_tokens) {
  const auto is_end = [&](int token) {
    return std::find(end_tokens.begin(), end_tokens.end(), token) != end_tokens.end();
  };
  return generation_stop(tokens, std::size_t(appended), steps, target.config().seq_len, is_end)
      .has_value();
}

}  // namespace

SpecGeneration speculative_generate(SpecModel& target, Proposer& proposer,
                                    std::span<const int> prompt, int steps,
                                    const SamplingParams& sampling,
                                    std::span<const int> end_tokens) {
  check_generation(target, prompt, steps);
  SpeculativeDecoder decoder(target, proposer, sampling);
  prefill_target(target, prompt);
  proposer.prefill(prompt);
  SpecGeneration g;
  g.tokens.assign(prompt.begin(), prompt.end());
  const double t0 = now_seconds();
  int appended = 0;
  do {
    appended = decoder.round(g.tokens, steps);
  } while (!finished(target, g.tokens, appended, steps, end_tokens));
  g.decode_seconds = now_seconds() - t0;
  g.generated = static_cast<int>(g.tokens.size() - prompt.size());
  g.stats = decoder.stats();
  return g;
}

SpecGeneration plain_generate(SpecModel& target, std::span<const int> prompt, int steps,
                              const SamplingParams& sampling, std::span<const int> end_tokens) {
  check_generation(target, prompt, steps);
  Sampler sampler(sampling, target.config().vocab_size);
  prefill_target(target, prompt);
  SpecGeneration g;
  g.tokens.assign(prompt.begin(), prompt.end());
  std::vector<float> logits;
  const double t0 = now_seconds();
  do {
    target.forward(std::span<const int>(&g.tokens.back(), 1), LogitsMode::last, logits);
    g.tokens.push_back(sampler.sample(logits, g.tokens));
  } while (!finished(target, g.tokens, 1, steps, end_tokens));
  g.decode_seconds = now_seconds() - t0;
  g.generated = static_cast<int>(g.tokens.size() - prompt.size());
  return g;
}

}  // namespace inferlab
