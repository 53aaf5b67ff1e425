// The proposers: a draft model, an n-gram lookup, a token tree.
#include "inferlab/runtime/speculative_proposers.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {
// The draft's random stream differs from verification's (both derive from the one seed), so
// the draft's guesses are independent of the coins that judge them.
constexpr std::uint64_t kDraftSeedSalt = 0xD1B54A32D192ED03ull;

void check_k(int k) {
  if (k < 1) throw ParameterError("k", fmt::format("{}: a draft must propose at least 1 token", k));
}

std::vector<float> one_hot(int token, int vocab) {
  std::vector<float> q(std::size_t(vocab), 0.0f);
  q[std::size_t(token)] = 1.0f;
  return q;
}

}  // namespace

double tree_node_count(int branch, int depth) {
  double nodes = 0.0, level = 1.0;
  for (int d = 0; d < depth; ++d) nodes += (level *= branch);
  return nodes;
}

ModelProposer::ModelProposer(SpecModel& draft, const SamplingParams& sampling)
    : draft_(&draft),
      sampler_(sampling, draft.config().vocab_size),
      rng_(sampling.seed ^ kDraftSeedSalt) {}

DraftModelProposer::DraftModelProposer(SpecModel& draft, const SamplingParams& sampling, int k,
                                       std::string name)
    : ModelProposer(draft, sampling), k_(k), name_(std::move(name)) {
  check_k(k);
}

void DraftModelProposer::propose(std::span<const int> context, int max_nodes, DraftTree& out) {
  out.clear();
  // The draft forwards the context and K - 1 of its own guesses: they must fit in its cache.
  const int room = draft_->capacity() - static_cast<int>(context.size()) + 1;
  const int k = std::min({k_, max_nodes, room});
  if (k <= 0) return;
  draft_->forward_context(context, logits_);
  history_.assign(context.begin(), context.end());
  for (int i = 0; i < k; ++i) {
    // q is exactly what the target's sampler would draw from with the draft's logits.
    std::vector<float> q = sampler_.distribution(logits_, history_);
    const int x = sampler_.params().greedy() ? argmax(q) : sample_from(q, rng_.next_f32());
    out.add(x, i - 1, std::move(q));
    history_.push_back(x);
    if (i + 1 < k) draft_->forward(std::span<const int>(&x, 1), LogitsMode::last, logits_);
  }
}

NgramProposer::NgramProposer(int max_n, int k, int vocab_size)
    : max_n_(max_n), k_(k), vocab_(vocab_size) {
  if (max_n < 1)
    throw ParameterError("max_n", fmt::format("{}: the n-gram size must be >= 1", max_n));
  check_k(k);
}

void NgramProposer::propose(std::span<const int> context, int max_nodes, DraftTree& out) {
  out.clear();
  const int k = std::min(k_, max_nodes);
  const int n_ctx = static_cast<int>(context.size());
  if (k <= 0) return;
  // Longest suffix first: a longer match is stronger evidence that history repeats.
  for (int n = std::min(max_n_, n_ctx - 1); n >= 1; --n) {
    const std::span<const int> suffix = context.subspan(std::size_t(n_ctx - n));
    // The most recent earlier occurrence: recent text is the likeliest to repeat.
    for (int s = n_ctx - n - 1; s >= 0; --s) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + s)) continue;
      for (int j = 0; j < k && s + n + j < n_ctx; ++j) {
        const int x = context[std::size_t(s + n + j)];
        out.add(x, j - 1, one_hot(x, vocab_));
      }
      return;
    }
  }
}

TreeProposer::TreeProposer(SpecModel& draft, const SamplingParams& sampling, int branch, int depth)
    : ModelProposer(draft, sampling), branch_(branch), depth_(depth) {
  if (draft.device() != Device::cpu) {
    throw Error(
        fmt::format("the tree proposer on {}: tree verification needs tree attention (each "
                    "node sees only its ancestors), which the {} runner does not have; run the "
                    "tree on the cpu",
                    device_name(draft.device()), device_name(draft.device())));
  }
  if (branch < 1) throw ParameterError("tree_branch", fmt::format("{}: must be >= 1", branch));
  if (depth < 1) throw ParameterError("tree_depth", fmt::format("{}: must be >= 1", depth));
  const double nodes = tree_node_count(branch, depth);
  if (nodes > kMaxTreeNodes) {
    throw ParameterError("tree_branch",
                         fmt::format("{}: a tree of depth {} has {} nodes (at most {})", branch,
                                     depth, nodes, kMaxTreeNodes));
  }
}

void TreeProposer::propose(std::span<const int> context, int max_nodes, DraftTree& out) {
  out.clear();
  const int base = static_cast<int>(context.size());
  // Nodes occupy draft rows base, base + 1, ... while the levels are drafted.
  max_nodes = std::min(max_nodes, draft_->capacity() - base);
  if (max_nodes <= 0) return;
  draft_->forward_context(context, logits_);
  const int V = draft_->config().vocab_size;

  struct Open {  // a node whose children are to be chosen
    int node;
    std::vector<float> logits;
    std::vector<int> history;
  };
  std::vector<Open> frontier;
  frontier.push_back({-1, logits_, std::vector<int>(context.begin(), context.end())});
  std::vector<int> parent_rows;  // TreeMask parents: row of each node's parent, -1 for a root
  for (int level = 0; level < depth_ && !frontier.empty(); ++level) {
    const int first_new = out.size();
    for (const Open& f : frontier) {
      if (sampler_.params().greedy()) {
        // EAGLE-2's choice: the draft's top candidates, each a deterministic (one-hot) guess.
        std::vector<float> z = f.logits;
        apply_penalties(z, f.history, sampler_.params());
        std::vector<int> ids(z.size());
        std::iota(ids.begin(), ids.end(), 0);
        const int b = std::min(branch_, V);
        std::partial_sort(ids.begin(), ids.begin() + b, ids.end(), [&](int a, int c) {
          return z[std::size_t(a)] > z[std::size_t(c)] ||
                 (z[std::size_t(a)] == z[std::size_t(c)] && a < c);
        });
        for (int j = 0; j < b && out.size() < max_nodes; ++j) {
          out.add(ids[std::size_t(j)], f.node, one_hot(ids[std::size_t(j)], V));
        }
      } else {
        // Draws without replacement: sibling j comes from q with siblings 0..j-1 removed.
        std::vector<float> w = sampler_.distribution(f.logits, f.history);
        for (int j = 0; j < branch_ && out.size() < max_nodes; ++j) {
          const double total = std::accumulate(w.begin(), w.end(), 0.0);
          if (!(total > 0.0)) break;  // q's support is exhausted
          std::vector<float> qj(w.size());
          for (std::size_t i = 0; i < w.size(); ++i) qj[i] = static_cast<float>(w[i] / total);
          const int x = sample_from(qj, rng_.next_f32());
          out.add(x, f.node, std::move(qj));
          w[std::size_t(x)] = 0.0f;
        }
      }
    }
    for (int i = first_new; i < out.size(); ++i) {
      const int parent = out.parents[std::size_t(i)];
      parent_rows.push_back(parent < 0 ? -1 : base + parent);
    }
    if (level + 1 == depth_ || out.size() == first_new) break;
    // The next level needs q after each new node: one draft forward over the whole level, each
    // node seeing only its ancestors.
    const TreeMask mask{base, parent_rows};
    const std::span<const int> level_tokens(out.tokens.data() + first_new,
                                            std::size_t(out.size() - first_new));
    draft_->forward(level_tokens, LogitsMode::all, logits_, &mask);
    std::vector<Open> next;
    for (int i = first_new; i < out.size(); ++i) {
      const int parent = out.parents[std::size_t(i)];
      const Open* up = nullptr;
      for (const Open& f : frontier) {
        if (f.node == parent) up = &f;
      }
      Open o{i,
             std::vector<float>(logits_.begin() + std::ptrdiff_t(i - first_new) * V,
                                logits_.begin() + std::ptrdiff_t(i - first_new + 1) * V),
             up->history};
      o.history.push_back(out.tokens[std::size_t(i)]);
      next.push_back(std::move(o));
    }
    frontier = std::move(next);
  }
  draft_->truncate(base);  // tree rows are not a sequence; the next round starts from context
}

}  // namespace inferlab
