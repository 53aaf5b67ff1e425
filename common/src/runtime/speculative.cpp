// Speculative decoding: proposers, exact verification, rollback, the decoding loop.
#include "inferlab/runtime/speculative.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

// ---------------------------------------------------------------------------------------------
// KV rollback
// ---------------------------------------------------------------------------------------------

namespace {

// keep_rows' contract, shared by both storages.
void check_kept_rows(int base, int length, std::span<const int> rows) {
  if (base < 0 || base > length) {
    throw Error(fmt::format("KV rollback: base {} outside [0, {}]", base, length));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int prev = i == 0 ? base - 1 : rows[i - 1];
    if (rows[i] <= prev || rows[i] >= length) {
      throw Error(fmt::format("KV rollback: kept row {} must be ascending and in [{}, {})", rows[i],
                              base, length));
    }
  }
}

int blocks_for(int positions, int block_size) { return (positions + block_size - 1) / block_size; }

}  // namespace

void ContiguousKVRollback::truncate(int length) {
  if (length < 0 || length > cache_->length()) {
    throw Error(
        fmt::format("KV rollback: cannot truncate {} positions to {}", cache_->length(), length));
  }
  cache_->set_length(length);
}

void ContiguousKVRollback::keep_rows(int base, std::span<const int> rows) {
  check_kept_rows(base, cache_->length(), rows);
  // Ascending rows, each >= its destination, so copying in order never overwrites a row that
  // is still to be read. A row already in place (a chain's accepted prefix) is not copied.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int to = base + static_cast<int>(i);
    if (rows[i] != to) cache_->copy_position(rows[i], to);
  }
  cache_->set_length(base + static_cast<int>(rows.size()));
}

PagedKVRollback::PagedKVRollback(KVSequence& sequence, BlockAllocator& allocator)
    : seq_(&sequence), alloc_(&allocator) {
  if (sequence.pool().num_blocks() != allocator.num_blocks()) {
    throw Error(fmt::format("paged KV rollback: the pool has {} blocks, the allocator {}",
                            sequence.pool().num_blocks(), allocator.num_blocks()));
  }
}

void PagedKVRollback::make_private(int index) {
  const int shared = seq_->blocks()[std::size_t(index)];
  if (alloc_->ref_count(shared) == 1) return;
  // Another table reads this block: write into a copy, and leave the original to the others.
  const int copy = alloc_->allocate();
  seq_->pool().copy_block(shared, copy);
  alloc_->release(shared);
  seq_->replace_block(index, copy);
}

void PagedKVRollback::release_from(int index) {
  const std::vector<int> table = seq_->blocks();
  const int length = seq_->length();
  if (index >= static_cast<int>(table.size())) return;
  // KVSequence has no "pop": rebuild the table from the blocks that stay.
  seq_->release_blocks();
  for (int b = 0; b < static_cast<int>(table.size()); ++b) {
    if (b < index) {
      seq_->append_block(table[std::size_t(b)]);
    } else {
      alloc_->release(table[std::size_t(b)]);  // a shared block only loses this reference
    }
  }
  seq_->set_length(length);
}

void PagedKVRollback::truncate(int length) {
  if (length < 0 || length > seq_->length()) {
    throw Error(
        fmt::format("KV rollback: cannot truncate {} positions to {}", seq_->length(), length));
  }
  seq_->set_length(length);
  release_from(blocks_for(length, seq_->pool().block_size()));
}

void PagedKVRollback::keep_rows(int base, std::span<const int> rows) {
  check_kept_rows(base, seq_->length(), rows);
  const int B = seq_->pool().block_size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int to = base + static_cast<int>(i);
    if (rows[i] == to) continue;  // already in place: nothing is written
    make_private(to / B);
    seq_->copy_position(rows[i], to);
  }
  truncate(base + static_cast<int>(rows.size()));
}

int PagedKVRollback::blocks_needed(int length) const {
  const int B = seq_->pool().block_size();
  const int have = static_cast<int>(seq_->blocks().size());
  if (length <= seq_->length()) return 0;
  const int first = seq_->length() / B, last = (length - 1) / B;
  int need = std::max(0, last + 1 - have);
  for (int b = first; b <= std::min(last, have - 1); ++b)
    if (alloc_->ref_count(seq_->blocks()[std::size_t(b)]) > 1) ++need;
  return need;
}

void PagedKVRollback::reserve(int length) {
  const int need = blocks_needed(length);
  if (need > alloc_->num_free()) {
    throw Error(fmt::format("paged KV: {} positions need {} more blocks of {}, {} are free", length,
                            need, seq_->pool().block_size(), alloc_->num_free()));
  }
  if (length <= seq_->length()) return;
  const int B = seq_->pool().block_size();
  const int first = seq_->length() / B, last = (length - 1) / B;
  const int have = static_cast<int>(seq_->blocks().size());
  for (int b = first; b <= std::min(last, have - 1); ++b) make_private(b);
  while (static_cast<int>(seq_->blocks().size()) <= last) seq_->append_block(alloc_->allocate());
}

// ---------------------------------------------------------------------------------------------
// SpecModel
// ---------------------------------------------------------------------------------------------

namespace {

SpecModelOptions with_capacity(int capacity) {
  SpecModelOptions o;
  o.capacity = capacity;
  return o;
}

}  // namespace

SpecModel::SpecModel(const Model& model, int capacity)
    : SpecModel(nullptr, model, with_capacity(capacity)) {}

SpecModel::SpecModel(const Model& model, const SpecModelOptions& options)
    : SpecModel(nullptr, model, options) {}

SpecModel::SpecModel(std::unique_ptr<Model> view, const Model& model,
                     const SpecModelOptions& options)
    : view_(std::move(view)),
      model_(view_ ? view_.get() : &model),
      block_size_(options.block_size) {
  const int seq_len = model_->config().seq_len;
  capacity_ = options.capacity == 0 ? seq_len : options.capacity;
  if (capacity_ < 1 || capacity_ > seq_len) {
    throw Error(fmt::format("KV cache capacity {} outside [1, seq_len = {}]", capacity_, seq_len));
  }
  if (block_size_ < 0) {
    throw Error(
        fmt::format("--block-size {}: must be >= 1 (paged) or 0 (contiguous)", block_size_));
  }
  runner_ = make_runner(*model_, options.device);
  if (block_size_ == 0) {
    cache_ = std::make_unique<KVCache>(make_cache(*runner_, capacity_));
    rollback_ = std::make_unique<ContiguousKVRollback>(static_cast<KVCache&>(*cache_));
  } else {
    // Exactly the blocks the capacity needs: the sequence can always grow to capacity_.
    const int blocks = blocks_for(capacity_, block_size_);
    pool_ = runner_->make_pool(blocks, block_size_, DType::f32);
    allocator_ = std::make_unique<BlockAllocator>(blocks);
    cache_ = std::make_unique<KVSequence>(*pool_);
    auto paged = std::make_unique<PagedKVRollback>(*cache_, *allocator_);
    paged_ = paged.get();
    rollback_ = std::move(paged);
  }
}

std::unique_ptr<SpecModel> SpecModel::early_exit(const Model& target, int layers, int capacity) {
  return early_exit(target, layers, with_capacity(capacity));
}

std::unique_ptr<SpecModel> SpecModel::early_exit(const Model& target, int layers,
                                                 const SpecModelOptions& options) {
  auto view = std::make_unique<Model>(Model::first_layers_view(target, layers));
  return std::unique_ptr<SpecModel>(new SpecModel(std::move(view), target, options));
}

void SpecModel::forward(std::span<const int> tokens, LogitsMode mode, std::vector<float>& logits,
                        const TreeMask* tree) {
  const int start = cache_->length();
  const int end = start + static_cast<int>(tokens.size());
  if (end > capacity_) {
    throw Error(fmt::format("forward: positions {}..{} beyond the cache's {} positions", start,
                            end - 1, capacity_));
  }
  if (tree && runner_->device() != Device::cpu) {
    throw Error(
        fmt::format("tree attention (each draft node sees only its ancestors) runs on "
                    "the CPU only: the {} runner attends causally",
                    device_name(runner_->device())));
  }
  const double t0 = now_seconds();
  if (paged_) paged_->reserve(end);
  const BatchEntry entry{tokens, start, cache_.get(), tree};
  runner_->step(std::span<const BatchEntry>(&entry, 1), mode, logits);
  seconds_ += now_seconds() - t0;
  ++calls_;
  tokens_forwarded_ += static_cast<long>(tokens.size());
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (tree && tree_from_ < 0 && start + static_cast<int>(tokens.size()) > tree->base) {
    tree_from_ = std::max(tree->base, start);
  }
}

int SpecModel::rollback_to_prefix_of(std::span<const int> context) {
  const std::size_t plain = tree_from_ < 0 ? tokens_.size() : std::size_t(tree_from_);
  const std::size_t limit = std::min(plain, context.size());
  std::size_t common = 0;
  while (common < limit && tokens_[common] == context[common]) ++common;
  truncate(static_cast<int>(common));
  return static_cast<int>(common);
}

void SpecModel::truncate(int length) {
  rollback_->truncate(length);
  tokens_.resize(std::size_t(length));
  if (tree_from_ >= length) tree_from_ = -1;
}

void SpecModel::keep_rows(int base, std::span<const int> rows) {
  rollback_->keep_rows(base, rows);
  for (std::size_t i = 0; i < rows.size(); ++i) tokens_[base + i] = tokens_[std::size_t(rows[i])];
  tokens_.resize(base + rows.size());
  if (tree_from_ >= base) tree_from_ = -1;  // the kept path is a plain sequence
}

void SpecModel::reset_counters() {
  calls_ = 0;
  tokens_forwarded_ = 0;
  seconds_ = 0.0;
}

namespace {

// Brings @p model's cache to hold context[0, n - 1] and returns the logits after context's last
// token: reuses the longest cached prefix (rolling back whatever else the cache holds) and
// forwards the rest in one call. The last token is re-forwarded if the cache already had it,
// since its logits were not kept.
void forward_context(SpecModel& model, std::span<const int> context, std::vector<float>& logits) {
  int held = model.rollback_to_prefix_of(context);
  if (held == static_cast<int>(context.size())) model.truncate(--held);
  model.forward(context.subspan(std::size_t(held)), LogitsMode::last, logits);
}

std::vector<float> one_hot(int token, int vocab) {
  std::vector<float> q(std::size_t(vocab), 0.0f);
  q[std::size_t(token)] = 1.0f;
  return q;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DraftTree
// ---------------------------------------------------------------------------------------------

void DraftTree::clear() {
  tokens.clear();
  parents.clear();
  q.clear();
}

int DraftTree::add(int token, int parent, std::vector<float> q_row) {
  tokens.push_back(token);
  parents.push_back(parent);
  q.push_back(std::move(q_row));
  return size() - 1;
}

bool DraftTree::is_chain() const {
  for (int i = 0; i < size(); ++i) {
    if (parents[std::size_t(i)] != i - 1) return false;
  }
  return true;
}

std::vector<int> DraftTree::depths() const {
  std::vector<int> d(tokens.size(), 0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    d[i] = parents[i] < 0 ? 0 : d[std::size_t(parents[i])] + 1;
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Proposers
// ---------------------------------------------------------------------------------------------

namespace {
// The draft's random stream differs from verification's (both derive from the one seed), so
// the draft's guesses are independent of the coins that judge them.
constexpr std::uint64_t kDraftSeedSalt = 0xD1B54A32D192ED03ull;
}  // namespace

DraftModelProposer::DraftModelProposer(SpecModel& draft, const SamplingParams& sampling, int k,
                                       std::string name)
    : draft_(&draft),
      sampler_(sampling, draft.config().vocab_size),
      rng_(sampling.seed ^ kDraftSeedSalt),
      k_(k),
      name_(std::move(name)) {
  if (k < 1) throw Error(fmt::format("--k {}: a draft must propose at least 1 token", k));
}

void DraftModelProposer::prefill(std::span<const int> prompt) {
  if (prompt.size() > 1) {
    draft_->truncate(0);
    draft_->forward(prompt.first(prompt.size() - 1), LogitsMode::last, logits_);
  }
}

void DraftModelProposer::propose(std::span<const int> context, int max_nodes, DraftTree& out) {
  out.clear();
  // The draft forwards the context and K - 1 of its own guesses: they must fit in its cache.
  const int room = draft_->capacity() - static_cast<int>(context.size()) + 1;
  const int k = std::min({k_, max_nodes, room});
  if (k <= 0) return;
  forward_context(*draft_, context, logits_);
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
  if (max_n < 1) throw Error(fmt::format("--ngram {}: the n-gram size must be >= 1", max_n));
  if (k < 1) throw Error(fmt::format("--k {}: a draft must propose at least 1 token", k));
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
    : draft_(&draft),
      sampler_(sampling, draft.config().vocab_size),
      params_(sampling),
      rng_(sampling.seed ^ kDraftSeedSalt),
      branch_(branch),
      depth_(depth) {
  if (draft.device() != Device::cpu) {
    throw Error(
        fmt::format("--proposer tree on --device {}: tree verification needs tree "
                    "attention (each node sees only its ancestors), which the {} runner "
                    "does not have; run the tree on --device cpu",
                    device_name(draft.device()), device_name(draft.device())));
  }
  if (branch < 1) throw Error(fmt::format("--tree-branch {}: must be >= 1", branch));
  if (depth < 1) throw Error(fmt::format("--tree-depth {}: must be >= 1", depth));
  double nodes = 0.0, level = 1.0;
  for (int d = 0; d < depth; ++d) nodes += (level *= branch);
  if (nodes > 4096) {
    throw Error(fmt::format("--tree-branch {} --tree-depth {}: {} nodes (at most 4096)", branch,
                            depth, nodes));
  }
}

void TreeProposer::prefill(std::span<const int> prompt) {
  if (prompt.size() > 1) {
    draft_->truncate(0);
    draft_->forward(prompt.first(prompt.size() - 1), LogitsMode::last, logits_);
  }
}

void TreeProposer::propose(std::span<const int> context, int max_nodes, DraftTree& out) {
  out.clear();
  const int base = static_cast<int>(context.size());
  // Nodes occupy draft rows base, base + 1, ... while the levels are drafted.
  max_nodes = std::min(max_nodes, draft_->capacity() - base);
  if (max_nodes <= 0) return;
  forward_context(*draft_, context, logits_);
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
      if (params_.greedy()) {
        // EAGLE-2's choice: the draft's top candidates, each a deterministic (one-hot) guess.
        std::vector<float> z = f.logits;
        apply_penalties(z, f.history, params_);
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

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

Verdict verify_draft(const DraftTree& tree, std::span<const float> p, bool greedy, Rng& rng) {
  const int n = tree.size();
  if (p.empty() || p.size() % std::size_t(n + 1) != 0) {
    throw Error(fmt::format("verify: {} probabilities for {} rows", p.size(), n + 1));
  }
  const std::size_t V = p.size() / std::size_t(n + 1);
  std::vector<std::vector<int>> children(std::size_t(n) + 1);  // index: parent + 1
  for (int i = 0; i < n; ++i) {
    if (tree.q[std::size_t(i)].size() != V) {
      throw Error(fmt::format("verify: node {} has a q of {} entries, vocabulary {}", i,
                              tree.q[std::size_t(i)].size(), V));
    }
    children[std::size_t(tree.parents[std::size_t(i)] + 1)].push_back(i);
  }

  Verdict v;
  std::vector<float> r;
  int at = -1;  // the node whose children are being tried (-1: the context)
  while (true) {
    const std::span<const float> row = p.subspan(std::size_t(at + 1) * V, V);
    const std::vector<int>& kids = children[std::size_t(at + 1)];
    if (greedy) {
      // p is one-hot at the target's argmax: a child is accepted iff it is that token.
      const int best = argmax(row);
      const auto hit = std::find_if(kids.begin(), kids.end(),
                                    [&](int c) { return tree.tokens[std::size_t(c)] == best; });
      if (hit == kids.end()) {
        v.next_token = best;
        return v;
      }
      v.path.push_back(*hit);
      at = *hit;
      continue;
    }
    r.assign(row.begin(), row.end());
    int accepted = -1;
    for (int c : kids) {
      const std::size_t x = std::size_t(tree.tokens[std::size_t(c)]);
      const std::vector<float>& q = tree.q[std::size_t(c)];
      if (!(q[x] > 0.0f)) {
        throw Error(fmt::format("verify: node {} proposes token {} with q = 0", c, x));
      }
      // Accept with probability min(1, r(x) / q(x)).
      if (rng.next_f32() * q[x] < r[x]) {
        accepted = c;
        break;
      }
      // Rejected: what r has beyond q is what the next guess (or the final draw) must supply.
      double total = 0.0;
      for (std::size_t i = 0; i < V; ++i) {
        r[i] = std::max(0.0f, r[i] - q[i]);
        total += r[i];
      }
      if (total > 0.0) {
        for (float& ri : r) ri = static_cast<float>(ri / total);
      } else {
        r.assign(row.begin(), row.end());  // r == q up to round-off: rejection had probability 0
      }
    }
    if (accepted < 0) {
      v.next_token = sample_from(r, rng.next_f32());
      return v;
    }
    v.path.push_back(accepted);
    at = accepted;
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and the model
// ---------------------------------------------------------------------------------------------

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

double expected_tokens_per_round(double alpha, int k) {
  if (alpha >= 1.0) return k + 1.0;
  return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, int k, double c, double v) {
  return expected_tokens_per_round(alpha, k) / (k * c + v);
}

// ---------------------------------------------------------------------------------------------
// The decoder
// ---------------------------------------------------------------------------------------------

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
  int held = target_->rollback_to_prefix_of(context);
  if (held == n_ctx) target_->truncate(--held);
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

// ---------------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------------

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

// Prefills everything but the prompt's last token (the first round or step forwards it).
void prefill_target(SpecModel& target, std::span<const int> prompt) {
  std::vector<float> logits;
  target.truncate(0);
  if (prompt.size() > 1) target.forward(prompt.first(prompt.size() - 1), LogitsMode::last, logits);
  target.reset_counters();
}

// generate()'s stopping rule: at most steps + 1 tokens (steps positions forwarded), and the
// sequence ends at the first generated BOS (kept). Returns true when the sequence is done.
bool finish(std::vector<int>& tokens, std::size_t prompt_size, int steps) {
  const auto bos = std::find(tokens.begin() + std::ptrdiff_t(prompt_size), tokens.end(), kBosToken);
  if (bos != tokens.end()) {
    tokens.erase(bos + 1, tokens.end());
    return true;
  }
  return tokens.size() >= std::size_t(steps) + 1;
}

}  // namespace

SpecGeneration speculative_generate(SpecModel& target, Proposer& proposer,
                                    std::span<const int> prompt, int steps,
                                    const SamplingParams& sampling) {
  check_generation(target, prompt, steps);
  SpeculativeDecoder decoder(target, proposer, sampling);
  prefill_target(target, prompt);
  proposer.prefill(prompt);
  SpecGeneration g;
  g.tokens.assign(prompt.begin(), prompt.end());
  const double t0 = now_seconds();
  while (true) {
    decoder.round(g.tokens, steps);
    if (finish(g.tokens, prompt.size(), steps)) break;
  }
  g.decode_seconds = now_seconds() - t0;
  g.generated = static_cast<int>(g.tokens.size() - prompt.size());
  g.stats = decoder.stats();
  return g;
}

SpecGeneration plain_generate(SpecModel& target, std::span<const int> prompt, int steps,
                              const SamplingParams& sampling) {
  check_generation(target, prompt, steps);
  Sampler sampler(sampling, target.config().vocab_size);
  prefill_target(target, prompt);
  SpecGeneration g;
  g.tokens.assign(prompt.begin(), prompt.end());
  std::vector<float> logits;
  const double t0 = now_seconds();
  while (true) {
    target.forward(std::span<const int>(&g.tokens.back(), 1), LogitsMode::last, logits);
    g.tokens.push_back(sampler.sample(logits, g.tokens));
    if (finish(g.tokens, prompt.size(), steps)) break;
  }
  g.decode_seconds = now_seconds() - t0;
  g.generated = static_cast<int>(g.tokens.size() - prompt.size());
  return g;
}

SpeedupReport speedup_report(const SpecGeneration& spec, const SpecGeneration& plain, int k) {
  if (spec.generated <= 0 || plain.generated <= 0 || !(spec.decode_seconds > 0.0) ||
      !(plain.decode_seconds > 0.0) || spec.stats.rounds <= 0) {
    throw Error("speed-up report: a run generated nothing");
  }
  SpeedupReport r;
  r.tokens_per_s = spec.generated / spec.decode_seconds;
  r.plain_tokens_per_s = plain.generated / plain.decode_seconds;
  r.speedup_measured = r.tokens_per_s / r.plain_tokens_per_s;
  const double step = plain.decode_seconds / plain.generated;  // one plain decode step
  const double rounds = double(spec.stats.rounds);
  r.draft_cost_ratio = spec.stats.draft_seconds / (rounds * k) / step;
  r.verify_cost_ratio = spec.stats.verify_seconds / rounds / step;
  const double alpha = spec.stats.acceptance_rate();
  r.expected_tokens_per_round = expected_tokens_per_round(alpha, k);
  r.speedup_predicted = predicted_speedup(alpha, k, r.draft_cost_ratio, r.verify_cost_ratio);
  r.speedup_predicted_ideal = predicted_speedup(alpha, k, r.draft_cost_ratio, 1.0);
  r.target_forwards_per_token = rounds / spec.generated;
  return r;
}

}  // namespace inferlab
