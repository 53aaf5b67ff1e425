// Token masks: trie walk with pruning (fast, cached) and the brute-force oracle (the spec).
#include "inferlab/constrain/token_mask.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "inferlab/error.hpp"

namespace inferlab {

std::vector<std::string> token_byte_strings(const Tokenizer& tokenizer) {
  std::vector<std::string> out(static_cast<std::size_t>(tokenizer.vocab_size()));
  for (int t = 0; t < tokenizer.vocab_size(); ++t) {
    if (t == kUnkToken || t == kBosToken || t == kEosToken) continue;
    // After a non-BOS token: the piece's own text, `<0xXX>` decoded to its byte.
    out[static_cast<std::size_t>(t)] = tokenizer.decode_piece(kEosToken, t);
  }
  return out;
}

int TokenMask::count() const {
  int n = 0;
  for (const auto w : words) n += std::popcount(w);
  return n;
}

TokenTrie::TokenTrie(const std::vector<std::string>& tokens) : vocab_size_(static_cast<int>(tokens.size())) {
  // Sorting the strings makes every node's subtree a contiguous range: build by recursion on
  // the sorted list, one level (byte position) at a time.
  std::vector<int> order(tokens.size());
  std::iota(order.begin(), order.end(), 0);
  std::erase_if(order, [&](int t) { return tokens[static_cast<std::size_t>(t)].empty(); });
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return tokens[static_cast<std::size_t>(a)] < tokens[static_cast<std::size_t>(b)];
  });
  struct Pending {
    std::size_t lo, hi, depth;
  };
  // Breadth-first so that each node's children are contiguous.
  std::vector<Pending> level{{0, order.size(), 0}};
  std::vector<Pending> nodes{{0, order.size(), 0}};
  std::vector<std::vector<std::pair<std::uint8_t, std::uint32_t>>> children(1);
  std::vector<std::vector<int>> ends(1);
  node_of_sorted_.assign(order.size(), 0);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const Pending p = nodes[n];
    std::size_t i = p.lo;
    while (i < p.hi && tokens[static_cast<std::size_t>(order[i])].size() == p.depth) {
      ends[n].push_back(order[i]);
      node_of_sorted_[i] = static_cast<std::uint32_t>(n);
      ++i;
    }
    while (i < p.hi) {
      const auto b = static_cast<std::uint8_t>(tokens[static_cast<std::size_t>(order[i])][p.depth]);
      std::size_t j = i;
      while (j < p.hi && static_cast<std::uint8_t>(tokens[static_cast<std::size_t>(order[j])][p.depth]) == b) ++j;
      nodes.push_back({i, j, p.depth + 1});
      children.emplace_back();
      ends.emplace_back();
      children[n].emplace_back(b, static_cast<std::uint32_t>(nodes.size() - 1));
      i = j;
    }
  }
  first_child_.push_back(0);
  first_token_.push_back(0);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    for (const auto& [b, c] : children[n]) {
      child_byte_.push_back(b);
      child_node_.push_back(c);
    }
    token_ids_.insert(token_ids_.end(), ends[n].begin(), ends[n].end());
    first_child_.push_back(static_cast<std::uint32_t>(child_byte_.size()));
    first_token_.push_back(static_cast<std::uint32_t>(token_ids_.size()));
    lo_.push_back(static_cast<std::uint32_t>(nodes[n].lo));
    hi_.push_back(static_cast<std::uint32_t>(nodes[n].hi));
    depth_.push_back(static_cast<std::uint16_t>(std::min<std::size_t>(nodes[n].depth, 65535)));
  }
  sorted_ = std::move(order);
}

MaskComputer::MaskComputer(PushdownParser& parser, const TokenTrie& trie,
                           const std::vector<std::string>& token_bytes, int eos_token)
    : parser_(&parser), trie_(&trie), token_bytes_(&token_bytes), eos_(eos_token) {
  if (static_cast<int>(token_bytes_->size()) != trie.vocab_size()) {
    throw Error("MaskComputer: token byte strings and trie disagree on the vocabulary size");
  }
}

const TokenTrie::LoopTables& TokenTrie::loop_tables(const ByteSet& loop) const {
  auto& slot = loop_cache_[loop.bits];
  if (slot) return *slot;
  auto t = std::make_unique<LoopTables>();
  t->loop = loop;
  const std::size_t n = num_nodes();
  // Top-down (nodes are numbered breadth-first): depth of the last byte outside the loop.
  std::vector<std::uint16_t> last(n, 0);
  for (std::size_t u = 0; u < n; ++u) {
    for (std::uint32_t c = first_child_[u]; c < first_child_[u + 1]; ++c) {
      last[child_node_[c]] = loop.has(child_byte_[c]) ? last[u] : depth_[child_node_[c]];
    }
  }
  t->last_out.resize(sorted_.size());
  for (std::size_t i = 0; i < sorted_.size(); ++i) t->last_out[i] = last[node_of_sorted_[i]];
  // Bottom-up: does the subtree hold a byte outside the loop?
  t->must_walk.assign(n, 0);
  for (std::size_t u = n; u-- > 0;) {
    for (std::uint32_t c = first_child_[u]; c < first_child_[u + 1]; ++c) {
      if (!loop.has(child_byte_[c]) || t->must_walk[child_node_[c]]) {
        t->must_walk[u] = 1;
        break;
      }
    }
  }
  slot = std::move(t);
  return *slot;
}

ByteSet TokenTrie::json_string_loop() {
  ByteSet s;
  s.add_range(0x20, 0x7F);
  s.bits[0x22 >> 6] &= ~(std::uint64_t{1} << (0x22 & 63));
  s.bits[0x5C >> 6] &= ~(std::uint64_t{1} << (0x5C & 63));
  return s;
}

const TokenTrie::LoopTables* MaskComputer::loop_tables_for(int state) {
  if (static_cast<std::size_t>(state) >= loop_known_.size()) {
    loop_known_.resize(static_cast<std::size_t>(state) + 1, 0);
    loop_of_state_.resize(static_cast<std::size_t>(state) + 1, nullptr);
  }
  if (!loop_known_[static_cast<std::size_t>(state)]) {
    loop_known_[static_cast<std::size_t>(state)] = 1;
    // The bytes that bring this state back to itself.
    ByteSet loop;
    int n_loop = 0;
    for (unsigned b = 0; b < 256; ++b) {
      if (parser_->step(state, static_cast<unsigned char>(b)) == state) {
        loop.add(b);
        ++n_loop;
      }
    }
    if (n_loop >= kMinLoopBytes) loop_of_state_[static_cast<std::size_t>(state)] = &trie_->loop_tables(loop);
  }
  return loop_of_state_[static_cast<std::size_t>(state)];
}

void MaskComputer::walk(std::uint32_t node, int state, TokenMask& out) {
  // Finding a state's loop bytes costs 256 transitions: worth it only above a large subtree.
  const bool big = trie_->hi_[node] - trie_->lo_[node] >= kMinLoopSubtree;
  if (const TokenTrie::LoopTables* t = big ? loop_tables_for(state) : nullptr) {
    // Every token below this node whose remaining bytes are loop bytes ends in `state`:
    // allowed, found by a scan of the node's range instead of a walk.
    const std::uint16_t d = trie_->depth_[node];
    for (std::uint32_t i = trie_->lo_[node]; i < trie_->hi_[node]; ++i) {
      if (t->last_out[i] <= d) out.allow(trie_->sorted_[i]);
    }
    walk_loop(node, state, *t, out);
    return;
  }
  const std::uint32_t end = trie_->first_child_[node + 1];
  for (std::uint32_t c = trie_->first_child_[node]; c < end; ++c) {
    const int next = parser_->step(state, trie_->child_byte_[c]);
    if (next == PushdownParser::kDead) continue;  // prune: no token below extends this prefix
    const std::uint32_t child = trie_->child_node_[c];
    for (std::uint32_t k = trie_->first_token_[child]; k < trie_->first_token_[child + 1]; ++k) {
      out.allow(trie_->token_ids_[k]);
    }
    if (parser_->can_continue(next)) walk(child, next, out);
  }
}

// Below a node reached in loop state `state` by loop bytes only: loop-byte children stay in
// `state` (their all-loop tokens are allowed already) and are entered only when a byte outside
// the loop lies below; the other children are stepped and walked normally.
void MaskComputer::walk_loop(std::uint32_t node, int state, const TokenTrie::LoopTables& t, TokenMask& out) {
  for (std::uint32_t c = trie_->first_child_[node]; c < trie_->first_child_[node + 1]; ++c) {
    const std::uint8_t b = trie_->child_byte_[c];
    const std::uint32_t child = trie_->child_node_[c];
    if (t.loop.has(b)) {
      if (t.must_walk[child]) walk_loop(child, state, t, out);
      continue;
    }
    const int next = parser_->step(state, b);
    if (next == PushdownParser::kDead) continue;
    for (std::uint32_t k = trie_->first_token_[child]; k < trie_->first_token_[child + 1]; ++k) {
      out.allow(trie_->token_ids_[k]);
    }
    if (parser_->can_continue(next)) walk(child, next, out);
  }
}

const TokenMask& MaskComputer::mask(int state) {
  if (state < 0) throw Error("mask of a dead parser state");
  if (static_cast<std::size_t>(state) >= cache_.size()) cache_.resize(static_cast<std::size_t>(state) + 1);
  if (!cache_[static_cast<std::size_t>(state)]) {
    auto m = std::make_unique<TokenMask>();
    m->words.assign((static_cast<std::size_t>(trie_->vocab_size()) + 63) / 64, 0);
    if (parser_->can_continue(state)) walk(0, state, *m);
    if (parser_->accepts(state) && eos_ >= 0 && eos_ < trie_->vocab_size()) m->allow(eos_);
    // walk() may have grown the parser's states, never this cache: the slot is still valid.
    cache_[static_cast<std::size_t>(state)] = std::move(m);
  }
  return *cache_[static_cast<std::size_t>(state)];
}

bool MaskComputer::cached(int state) const {
  return state >= 0 && static_cast<std::size_t>(state) < cache_.size() && cache_[static_cast<std::size_t>(state)];
}

TokenMask MaskComputer::oracle_mask(int state) {
  TokenMask m;
  m.words.assign((static_cast<std::size_t>(trie_->vocab_size()) + 63) / 64, 0);
  const PushdownParser::RawState start = parser_->raw(state);
  for (int t = 0; t < trie_->vocab_size(); ++t) {
    const std::string& bytes = (*token_bytes_)[static_cast<std::size_t>(t)];
    if (bytes.empty()) continue;
    PushdownParser::RawState s = start;
    for (const char c : bytes) {
      s = parser_->step_uncached(s, static_cast<unsigned char>(c));
    }
    // Allowed when some continuation is still possible after the last byte.
    if (!s.stacks.empty() || s.accept) m.allow(t);
  }
  if (start.accept && eos_ >= 0 && eos_ < trie_->vocab_size()) m.allow(eos_);
  return m;
}

void apply_token_mask(std::span<float> logits, const TokenMask& mask) {
  for (std::size_t t = 0; t < logits.size(); ++t) {
    if (!mask.allowed(static_cast<int>(t))) logits[t] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace inferlab
