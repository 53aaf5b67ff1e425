// Token masks: trie walk with pruning (fast, cached) and the brute-force oracle (the spec).
#include "inferlab/constrain/token_mask.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "inferlab/base/error.hpp"

namespace inferlab {

std::vector<std::string> token_byte_strings(const Tokenizer& tokenizer) {
  std::vector<std::string> out(static_cast<std::size_t>(tokenizer.vocab_size()));
  for (int t = 0; t < tokenizer.vocab_size(); ++t) {
    // Markup (BOS, EOS, `<|im_end|>`), the unknown piece and unused slots are not text.
    const TokenType type = tokenizer.type(t);
    if (type == TokenType::control || type == TokenType::unknown || type == TokenType::unused)
      continue;
    // Inside a text, after a token that is not markup (t itself): the piece's own text with
    // its leading space, `<0xXX>` decoded to its byte.
    out[static_cast<std::size_t>(t)] = tokenizer.decode_piece(t, t);
  }
  return out;
}

int TokenMask::count() const {
  int n = 0;
  for (const auto w : words) n += std::popcount(w);
  return n;
}

TokenTrie::TokenTrie(const std::vector<std::string>& tokens)
    : vocab_size_(static_cast<int>(tokens.size())) {
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
      while (j < p.hi &&
             static_cast<std::uint8_t>(tokens[static_cast<std::size_t>(order[j])][p.depth]) == b)
        ++j;
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
    max_depth_ = std::max<int>(max_depth_, depth_.back());
  }
  sorted_ = std::move(order);
}

MaskComputer::MaskComputer(PushdownParser& parser, const TokenTrie& trie,
                           const std::vector<std::string>& token_bytes, int eos_token)
    : parser_(&parser), trie_(&trie), token_bytes_(&token_bytes), eos_(eos_token) {
  if (static_cast<int>(token_bytes_->size()) != trie.vocab_size()) {
    throw Error("MaskComputer: token byte strings and trie disagree on the vocabulary size");
  }
  max_token_bytes_ = trie.max_depth_;
}

namespace {

// The UTF-8 decoder of the loop tables. State 0: at a character boundary; 1: one continuation
// byte (80-BF) left; 2: two left, next 80-BF; 3: two left, next A0-BF (after E0: no overlong
// forms); 4: two left, next 80-9F (after ED: no surrogates); 5: three left, next 80-BF;
// 6: three left, next 90-BF (after F0); 7: three left, next 80-8F (after F4: <= U+10FFFF).
constexpr int kBad = -1;
int utf8_next(int st, unsigned b, const ByteSet& loop, bool utf8) {
  if (!utf8) return st == 0 && loop.has(b) ? 0 : kBad;
  const bool cont = b >= 0x80 && b <= 0xBF;
  switch (st) {
    case 0:
      if (b < 0x80) return loop.has(b) ? 0 : kBad;
      if (b >= 0xC2 && b <= 0xDF) return 1;
      if (b == 0xE0) return 3;
      if (b == 0xED) return 4;
      if (b >= 0xE1 && b <= 0xEF) return 2;
      if (b == 0xF0) return 6;
      if (b >= 0xF1 && b <= 0xF3) return 5;
      if (b == 0xF4) return 7;
      return kBad;
    case 1:
      return cont ? 0 : kBad;
    case 2:
      return cont ? 1 : kBad;
    case 3:
      return b >= 0xA0 && b <= 0xBF ? 1 : kBad;
    case 4:
      return b >= 0x80 && b <= 0x9F ? 1 : kBad;
    case 5:
      return cont ? 2 : kBad;
    case 6:
      return b >= 0x90 && b <= 0xBF ? 2 : kBad;
    case 7:
      return b >= 0x80 && b <= 0x8F ? 2 : kBad;
    default:
      return kBad;
  }
}
}  // namespace

const TokenTrie::LoopTables& TokenTrie::loop_tables(const ByteSet& loop, bool utf8) const {
  auto& slot = loop_cache_[{loop.bits, utf8}];
  if (slot) return *slot;
  auto t = std::make_unique<LoopTables>();
  t->loop = loop;
  t->utf8 = utf8;
  const std::size_t n = num_nodes();
  // Top-down (nodes are numbered breadth-first): the decoder run through the node's path,
  // restarted where a byte does not continue it, and where the current run of whole loop
  // characters began (last[u]). A run that continues the parent's keeps its start.
  std::vector<std::uint16_t> last(n, 0);
  t->phase.assign(n, 0);
  for (std::size_t u = 0; u < n; ++u) {
    const int st = t->phase[u] & ~LoopTables::kContinues;
    for (std::uint32_t c = first_child_[u]; c < first_child_[u + 1]; ++c) {
      const std::uint32_t v = child_node_[c];
      const unsigned b = child_byte_[c];
      if (const int next = utf8_next(st, b, loop, utf8); next != kBad) {
        t->phase[v] = static_cast<std::uint8_t>(next | LoopTables::kContinues);
        last[v] = last[u];
      } else if (const int fresh = utf8_next(0, b, loop, utf8); fresh != kBad) {
        t->phase[v] = static_cast<std::uint8_t>(fresh);  // a new run starts at this byte
        last[v] = depth_[u];
      } else {
        t->phase[v] = 0;  // this byte is outside W: a run can only start after it
        last[v] = depth_[v];
      }
    }
  }
  // A token whose last character is complete is made of loop characters from last[] on; one
  // that ends inside a character, only from its end.
  t->last_out.resize(sorted_.size());
  for (std::size_t i = 0; i < sorted_.size(); ++i) {
    const std::uint32_t u = node_of_sorted_[i];
    t->last_out[i] = (t->phase[u] & ~LoopTables::kContinues) == 0 ? last[u] : depth_[u];
  }
  // Bottom-up: does the subtree hold a token the scan at an ancestor does not cover (a byte
  // that breaks the run, or a token ending inside a character)?
  t->must_walk.assign(n, 0);
  for (std::size_t u = n; u-- > 0;) {
    std::uint8_t m =
        first_token_[u] < first_token_[u + 1] && (t->phase[u] & ~LoopTables::kContinues) != 0;
    for (std::uint32_t c = first_child_[u]; c < first_child_[u + 1] && !m; ++c) {
      const std::uint32_t v = child_node_[c];
      if (!(t->phase[v] & LoopTables::kContinues) || t->must_walk[v]) m = 1;
    }
    t->must_walk[u] = m;
  }
  // The scan below each ASCII child of the root, done once: by token id, the tokens whose
  // bytes after an ASCII first byte are whole W characters (see
  // MaskComputer::walk_root_into_loop). With utf8, also the tokens made entirely of W
  // characters whose first one is multi-byte.
  const std::size_t words = (static_cast<std::size_t>(vocab_size_) + 63) / 64;
  t->after_first.assign(words, 0);
  t->multibyte_first.assign(words, 0);
  for (std::uint32_t c = first_child_[0]; c < first_child_[1]; ++c) {
    const std::uint32_t v = child_node_[c];
    const bool ascii = child_byte_[c] < 0x80;
    if (!ascii && !utf8) break;  // children are sorted by byte
    auto& bits = ascii ? t->after_first : t->multibyte_first;
    for (std::uint32_t i = lo_[v]; i < hi_[v]; ++i) {
      const auto tok = static_cast<std::uint32_t>(sorted_[i]);
      if (t->last_out[i] <= (ascii ? 1 : 0)) bits[tok >> 6] |= std::uint64_t{1} << (tok & 63);
    }
  }
  slot = std::move(t);
  return *slot;
}

const TokenTrie::LoopTables* TokenTrie::find_loop_tables(const ByteSet& loop, bool utf8) const {
  const auto it = loop_cache_.find({loop.bits, utf8});
  return it == loop_cache_.end() ? nullptr : it->second.get();
}

ByteSet TokenTrie::json_string_loop() {
  ByteSet s;
  s.add_range(0x20, 0x7F);
  s.bits[0x22 >> 6] &= ~(std::uint64_t{1} << (0x22 & 63));
  s.bits[0x5C >> 6] &= ~(std::uint64_t{1} << (0x5C & 63));
  return s;
}

// Chooses the loop tables for `state`: a set W of characters (ASCII bytes L, plus every
// multi-byte UTF-8 character when that holds too) and the set C of states W reaches from
// `state`, such that every W character leads every state of C to a state of C. Then a token
// made of W characters cannot kill the parse from any state of C: it is allowed without a walk.
// C is {state} inside a free string (its characters loop); inside a string with a minimum
// length C counts the characters up to the minimum. What is chosen only decides how much the
// walk can skip; the closure is verified, so the mask stays exact.
const TokenTrie::LoopTables* MaskComputer::loop_tables_for(int state, std::uint32_t node) {
  auto grow = [&](int s) {
    if (static_cast<std::size_t>(s) >= loop_known_.size()) {
      loop_known_.resize(static_cast<std::size_t>(s) + 1, 0);
      loop_of_state_.resize(static_cast<std::size_t>(s) + 1, nullptr);
    }
  };
  grow(state);
  if (loop_known_[static_cast<std::size_t>(state)])
    return loop_of_state_[static_cast<std::size_t>(state)];
  // A cheap test first, on the bytes the walk needs anyway (the node's children): a state in
  // which few of them are possible (inside a number, say) is not worth 128 probes, each of
  // which may build a new parser state. Only ASCII children count, as L holds only ASCII
  // bytes: below a UTF-8 lead byte, where every child is a continuation byte, no run starts.
  int probed = 0, live = 0;
  for (std::uint32_t c = trie_->first_child_[node]; c < trie_->first_child_[node + 1]; ++c) {
    if (trie_->child_byte_[c] >= 0x80) break;  // children are sorted by byte
    ++probed;
    live += parser_->step(state, trie_->child_byte_[c]) != PushdownParser::kDead;
  }
  // (The state is not marked as decided here: a node with more children may decide it.)
  if (probed == 0 || live < std::min(kMinLoopBytes, probed / 2)) return nullptr;
  loop_known_[static_cast<std::size_t>(state)] = 1;
  // L: the ASCII bytes that lead to the state most of them lead to. Inside a string that is
  // the state after one more ordinary character (`"` and `\` lead elsewhere); right after the
  // `"` that opens a key, the state of a key that is none of the listed names (their first
  // letters lead elsewhere). Only this state's own transitions are probed, and the walk needs
  // them anyway: probing where the other bytes lead (an escape, a listed name) would build
  // parser states that the walk may never visit, which is what made the first masks slow.
  std::array<int, 0x80> to{};
  std::vector<std::pair<int, int>> votes;  // (successor, ASCII bytes leading to it): a few
  for (unsigned b = 0; b < 0x80; ++b) {
    to[b] = parser_->step(state, static_cast<unsigned char>(b));
    if (to[b] == PushdownParser::kDead) continue;
    auto it = std::find_if(votes.begin(), votes.end(),
                           [&](const std::pair<int, int>& v) { return v.first == to[b]; });
    if (it == votes.end()) it = votes.insert(votes.end(), {to[b], 0});
    ++it->second;
  }
  const auto most = std::max_element(
      votes.begin(), votes.end(), [](const std::pair<int, int>& a, const std::pair<int, int>& b) {
        return a.second < b.second;
      });
  if (most == votes.end() || most->second < kMinLoopBytes) return nullptr;
  const int majority = most->first;
  ByteSet loop;
  for (unsigned b = 0; b < 0x80; ++b) {
    if (to[b] == majority) loop.add(b);
  }
  // New tables cost a pass over the whole trie (about 1.5 ms for the Llama 2 vocabulary):
  // worth it for a state that loops on itself (a string's characters, a regex's [a-z]+), which
  // recurs at every character; not for a state that is left after one character, such as
  // the start of a key (its children, inside the key, use the string's own tables).
  const bool self_loop = majority == state;
  if (!self_loop && !trie_->find_loop_tables(loop, true) && !trie_->find_loop_tables(loop, false))
    return nullptr;
  // C: close under L (a byte that kills the parse from some state of C leaves L) and the
  // multi-byte characters (if one of them fails anywhere, W stays ASCII).
  std::vector<int> closed{state};
  // A chain that dies or runs too long leaves the states it saw marked "no tables": inside a
  // string with a maxLength every position would otherwise repeat the search (the chain dies
  // at the maximum, from every position).
  auto give_up = [&]() -> const TokenTrie::LoopTables* {
    for (const int x : closed) {
      grow(x);
      loop_known_[static_cast<std::size_t>(x)] = 1;
    }
    return nullptr;
  };
  bool utf8 = true;
  bool bounded = false;  // C is not closed, but W-strings of a token's length stay live
  for (std::size_t i = 0; i < closed.size(); ++i) {
    if (closed.size() > kMaxLoopStates) {
      // A long chain (a string with a large maxLength counts every character in states): no
      // closed C, but a token has at most max_token_bytes_ characters, so the tables hold
      // for `state` alone when every W-string that long stays live from it.
      if (!chain_stays_live(state, loop, utf8)) return give_up();
      bounded = true;
      break;
    }
    const int x = closed[i];
    int successor = PushdownParser::kDead;
    for (unsigned b = 0; b < 0x80; ++b) {
      if (!loop.has(b)) continue;
      const int y = parser_->step(x, static_cast<unsigned char>(b));
      if (y == PushdownParser::kDead) {
        loop.bits[b >> 6] &= ~(std::uint64_t{1} << (b & 63));
        continue;
      }
      // Only chains (every loop byte leads to one state: the same one, or the next count)
      // are worth it; a state whose bytes lead apart (inside a property name) is walked.
      if (successor != PushdownParser::kDead && y != successor) return nullptr;
      successor = y;
      if (std::find(closed.begin(), closed.end(), y) == closed.end()) closed.push_back(y);
    }
    int left = 0;
    for (const auto w : loop.bits) left += std::popcount(w);
    if (left < kMinLoopBytes) return give_up();
    if (utf8 && !utf8_chars_close(x, closed)) utf8 = false;
  }
  int n_loop = 0;
  for (const auto w : loop.bits) n_loop += std::popcount(w);
  if (n_loop < kMinLoopBytes) return nullptr;
  const TokenTrie::LoopTables* t =
      self_loop ? &trie_->loop_tables(loop, utf8) : trie_->find_loop_tables(loop, utf8);
  if (!t) return nullptr;
  if (bounded) {
    loop_of_state_[static_cast<std::size_t>(state)] = t;
    return t;
  }
  // Every state of C has its W-closure inside C: the same tables hold for it.
  for (const int x : closed) {
    grow(x);
    if (!loop_known_[static_cast<std::size_t>(x)]) {
      loop_known_[static_cast<std::size_t>(x)] = 1;
      loop_of_state_[static_cast<std::size_t>(x)] = t;
    }
  }
  loop_of_state_[static_cast<std::size_t>(state)] = t;
  return t;
}

// True when every string of up to max_token_bytes_ W characters (the bytes of `loop`, and the
// multi-byte characters while `utf8` stays set) leads `state` to a live state. Only chains are
// followed (every W character of a state leads to one successor, as a count of characters
// does); a multi-byte character that leads elsewhere clears `utf8`, as in the closed case.
// Each state's step along the chain is memoized, so the next count costs one new step.
bool MaskComputer::chain_stays_live(int state, const ByteSet& loop, bool& utf8) {
  int x = state;
  for (int k = 0; k < max_token_bytes_; ++k) {
    const auto at = static_cast<std::size_t>(x);
    if (at >= chain_.size()) chain_.resize(at + 1);
    ChainStep& c = chain_[at];
    if (!c.known || !(c.loop == loop)) {
      c = ChainStep{true, loop, PushdownParser::kDead, false};
      for (unsigned b = 0; b < 0x80; ++b) {
        if (!loop.has(b)) continue;
        const int y = parser_->step(x, static_cast<unsigned char>(b));
        const bool apart = c.successor != PushdownParser::kDead && y != c.successor;
        if (y == PushdownParser::kDead || apart) {
          c.successor = PushdownParser::kDead;
          break;
        }
        c.successor = y;
      }
      if (c.successor != PushdownParser::kDead) {
        ends_.clear();
        c.utf8 = utf8_chars_close(x, ends_) &&
                 std::all_of(ends_.begin(), ends_.end(), [&](int e) { return e == c.successor; });
      }
    }
    if (c.successor == PushdownParser::kDead) return false;
    utf8 = utf8 && c.utf8;
    x = c.successor;
  }
  return true;
}

// Every well-formed multi-byte UTF-8 character read from `state`: false when one of them kills
// the parse; else the states they end in are added to `closed`. Per lead byte, the set of
// states after each further byte (a few distinct states per step, thanks to the transition
// cache and the byte classes, so this is cheap).
// The answer depends on the state alone and is asked again at every character of a counted
// string (each count is a new state that looks ahead along the chain): memoized per state.
bool MaskComputer::utf8_chars_close(int state, std::vector<int>& closed) {
  const auto at = static_cast<std::size_t>(state);
  if (at >= utf8_ends_.size()) utf8_ends_.resize(at + 1);
  if (!utf8_ends_[at].known) {
    Utf8Ends found;
    found.known = true;
    found.live = utf8_chars_live(state, found.ends);
    utf8_ends_[at] = std::move(found);
  }
  const Utf8Ends& e = utf8_ends_[at];
  if (!e.live) return false;
  for (const int s : e.ends) {
    if (std::find(closed.begin(), closed.end(), s) == closed.end()) closed.push_back(s);
  }
  return true;
}

// utf8_chars_close's computation: false when a multi-byte character kills the parse from
// `state`, else true with the states they end in (each once) in `ends`.
bool MaskComputer::utf8_chars_live(int state, std::vector<int>& ends) {
  struct Lead {
    unsigned lo, hi;            // lead bytes
    unsigned next_lo, next_hi;  // the first continuation byte's range
    int length;                 // continuation bytes
  };
  static constexpr Lead kLeads[] = {{0xC2, 0xDF, 0x80, 0xBF, 1}, {0xE0, 0xE0, 0xA0, 0xBF, 2},
                                    {0xE1, 0xEC, 0x80, 0xBF, 2}, {0xED, 0xED, 0x80, 0x9F, 2},
                                    {0xEE, 0xEF, 0x80, 0xBF, 2}, {0xF0, 0xF0, 0x90, 0xBF, 3},
                                    {0xF1, 0xF3, 0x80, 0xBF, 3}, {0xF4, 0xF4, 0x80, 0x8F, 3}};
  std::vector<int> cur, next;
  for (const Lead& l : kLeads) {
    cur.clear();
    for (unsigned b = l.lo; b <= l.hi; ++b) {
      const int s = parser_->step(state, static_cast<unsigned char>(b));
      if (s == PushdownParser::kDead) return false;
      if (std::find(cur.begin(), cur.end(), s) == cur.end()) cur.push_back(s);
    }
    for (int k = 0; k < l.length; ++k) {
      const unsigned lo = k == 0 ? l.next_lo : 0x80, hi = k == 0 ? l.next_hi : 0xBF;
      next.clear();
      for (const int s : cur) {
        for (unsigned b = lo; b <= hi; ++b) {
          const int t = parser_->step(s, static_cast<unsigned char>(b));
          if (t == PushdownParser::kDead) return false;
          if (std::find(next.begin(), next.end(), t) == next.end()) next.push_back(t);
        }
      }
      cur.swap(next);
    }
    for (const int s : cur) {
      if (std::find(ends.begin(), ends.end(), s) == ends.end()) ends.push_back(s);
    }
  }
  return true;
}

void MaskComputer::walk(std::uint32_t node, int state, TokenMask& out) {
  // Finding a state's loop bytes costs 256 transitions: worth it only above a large subtree.
  // Once they are known, they serve every subtree: small subtrees add up (below the first
  // character of a key, each multi-byte character's subtree is small, and there are
  // thousands of them).
  const bool big = trie_->hi_[node] - trie_->lo_[node] >= kMinLoopSubtree;
  const bool known = static_cast<std::size_t>(state) < loop_known_.size() &&
                     loop_known_[static_cast<std::size_t>(state)];
  const TokenTrie::LoopTables* t = nullptr;
  if (known)
    t = loop_of_state_[static_cast<std::size_t>(state)];
  else if (big)
    t = loop_tables_for(state, node);
  // A root without tables of its own may lead into a state that has them (a key start).
  if (!t && node == 0 && walk_root_into_loop(state, out)) return;
  // The shortcut needs the node at a character boundary of the run (phase 0): then a token
  // below whose bytes from here on are loop characters has last_out <= depth.
  if (t && (t->phase[node] & ~TokenTrie::LoopTables::kContinues) == 0) {
    // Every such token ends in `state`: allowed, found by a scan of the node's range instead
    // of a walk.
    // Branch-free: whether a token qualifies follows no pattern the CPU could predict, and a
    // mispredicted branch per token cost more than the scan itself.
    const std::uint16_t d = trie_->depth_[node];
    const std::uint16_t* last_out = t->last_out.data();
    const int* sorted = trie_->sorted_.data();
    std::uint64_t* words = out.words.data();
    for (std::uint32_t i = trie_->lo_[node]; i < trie_->hi_[node]; ++i) {
      const auto tok = static_cast<std::uint32_t>(sorted[i]);
      words[tok >> 6] |= static_cast<std::uint64_t>(last_out[i] <= d) << (tok & 63);
    }
    walk_loop(node, state, *t, out);
    return;
  }
  const std::uint32_t end = trie_->first_child_[node + 1];
  for (std::uint32_t c = trie_->first_child_[node]; c < end; ++c) {
    const int next = parser_->step(state, trie_->child_byte_[c]);
    if (next == PushdownParser::kDead) continue;  // prune: no token below extends this prefix
    const std::uint32_t child = trie_->child_node_[c];
    if (enter(child, next, out)) walk(child, next, out);
  }
}

// A child whose prefix leads to the live state `next`: the tokens that end there are allowed,
// and the walk goes on below it when `next` can read more. In a frame walk (frame_ends_ set),
// a prefix that ends the frame's rule (`next` accepts) makes every token below it depend on
// the frames below: the child is recorded (unless an ancestor was), and only the tokens still
// alive inside the frame are allowed.
bool MaskComputer::enter(std::uint32_t child, int next, TokenMask& out) {
  const bool goes_on = parser_->can_continue(next);
  if (frame_ends_ && parser_->accepts(next)) {
    // The walk enters a node before the nodes below it: an ancestor recorded is the last one.
    const bool below_last = !frame_ends_->empty() &&
                            trie_->lo_[frame_ends_->back()] <= trie_->lo_[child] &&
                            trie_->hi_[child] <= trie_->hi_[frame_ends_->back()];
    if (!below_last) frame_ends_->push_back(child);
  }
  if (!frame_ends_ || goes_on) {
    for (std::uint32_t k = trie_->first_token_[child]; k < trie_->first_token_[child + 1]; ++k)
      out.allow(trie_->token_ids_[k]);
  }
  return goes_on;
}

// The root of a state that does not loop but whose ASCII bytes mostly lead into one state F
// that does: the start of a key, whose first character leads into the key's free tail (except
// `"`, `\` and the listed names' first letters). walk() would scan the subtree of each of
// those children, about the whole vocabulary, one token at a time; the tables hold that scan
// already done (LoopTables::after_first), so it is a copy of a bitset minus the subtrees of
// the other children, which are walked. When every multi-byte character leads into F too
// (checked as utf8_chars_close checks a loop), the tokens made of W characters that start
// with one are a second bitset, and below the lead bytes only what the scan does not cover is
// walked, as below F itself; else those children are walked. The mask is the one walk()
// computes, bit for bit.
bool MaskComputer::walk_root_into_loop(int state, TokenMask& out) {
  const std::uint32_t first = trie_->first_child_[0], end = trie_->first_child_[1];
  // The successor of each ASCII child (children are sorted by byte: ASCII ones come first).
  std::uint32_t ascii_end = first;
  while (ascii_end < end && trie_->child_byte_[ascii_end] < 0x80) ++ascii_end;
  root_next_.resize(ascii_end - first);
  for (std::uint32_t c = first; c < ascii_end; ++c)
    root_next_[c - first] = parser_->step(state, trie_->child_byte_[c]);
  // F: the successor most ASCII children share.
  int into = PushdownParser::kDead, votes = 0;
  for (const int a : root_next_) {
    if (a == PushdownParser::kDead || a == into) continue;
    const auto n = std::count(root_next_.begin(), root_next_.end(), a);
    if (n > votes) {
      into = a;
      votes = static_cast<int>(n);
    }
    if (2 * votes > static_cast<int>(root_next_.size())) break;
  }
  if (into == PushdownParser::kDead || into == state || votes < kMinLoopBytes) return false;
  const TokenTrie::LoopTables* t = nullptr;
  for (std::uint32_t c = first; c < ascii_end && !t; ++c) {
    if (root_next_[c - first] == into) t = loop_tables_for(into, trie_->child_node_[c]);
  }
  if (!t) return false;
  // The scan's result, less the tokens of the children that do not lead into F.
  scratch_ = t->after_first;
  for (std::uint32_t c = first; c < ascii_end; ++c) {
    if (root_next_[c - first] == into) continue;
    const std::uint32_t v = trie_->child_node_[c];
    for (std::uint32_t i = trie_->lo_[v]; i < trie_->hi_[v]; ++i) {
      const auto tok = static_cast<std::uint32_t>(trie_->sorted_[i]);
      scratch_[tok >> 6] &= ~(std::uint64_t{1} << (tok & 63));
    }
  }
  for (std::size_t w = 0; w < scratch_.size(); ++w) out.words[w] |= scratch_[w];
  root_ends_.clear();
  const bool multibyte =
      t->utf8 && utf8_chars_close(state, root_ends_) &&
      std::all_of(root_ends_.begin(), root_ends_.end(), [&](int e) { return e == into; });
  if (multibyte) {
    for (std::size_t w = 0; w < scratch_.size(); ++w) out.words[w] |= t->multibyte_first[w];
  }
  // The rest as walk() would do it: below F's children (and the lead bytes, when multi-byte
  // characters lead into F), what the scan does not cover; the other children walked.
  for (std::uint32_t c = first; c < end; ++c) {
    const std::uint32_t child = trie_->child_node_[c];
    const int next = parser_->step(state, trie_->child_byte_[c]);
    if (next == PushdownParser::kDead || !enter(child, next, out)) continue;
    if (c < ascii_end ? next == into : multibyte)
      walk_loop(child, next, *t, out);
    else
      walk(child, next, out);
  }
  return true;
}

// Below a node whose path from the scanning ancestor is whole or partial loop characters
// (`state` is the parser's real state there): a child that continues the run is entered only
// when its subtree holds a token the scan did not cover; a child that breaks it is walked
// normally. Every token allowed here is allowed by a real (cached) step, so it is exact.
void MaskComputer::walk_loop(std::uint32_t node, int state, const TokenTrie::LoopTables& t,
                             TokenMask& out) {
  for (std::uint32_t c = trie_->first_child_[node]; c < trie_->first_child_[node + 1]; ++c) {
    const std::uint32_t child = trie_->child_node_[c];
    const bool continues = t.phase[child] & TokenTrie::LoopTables::kContinues;
    if (continues && !t.must_walk[child]) continue;  // every token below was allowed by the scan
    const int next = parser_->step(state, trie_->child_byte_[c]);
    if (next == PushdownParser::kDead || !enter(child, next, out)) continue;
    if (continues)
      walk_loop(child, next, t, out);
    else
      walk(child, next, out);
  }
}

const TokenMask& MaskComputer::mask(int state) {
  if (state < 0) throw Error("mask of a dead parser state");
  if (static_cast<std::size_t>(state) >= cache_.size())
    cache_.resize(static_cast<std::size_t>(state) + 1);
  if (!cache_[static_cast<std::size_t>(state)]) {
    auto m = std::make_unique<TokenMask>();
    m->words.assign((static_cast<std::size_t>(trie_->vocab_size()) + 63) / 64, 0);
    if (parser_->can_continue(state) && !combine_frames(state, *m)) walk(0, state, *m);
    if (parser_->accepts(state) && eos_ >= 0 && eos_ < trie_->vocab_size()) m->allow(eos_);
    // walk() may have grown the parser's states, never this cache: the slot is still valid.
    cache_[static_cast<std::size_t>(state)] = std::move(m);
  }
  return *cache_[static_cast<std::size_t>(state)];
}

// The mask of a state as the OR of its stacks' frame masks (see mask() in the header), when
// that is cheaper than a walk: the state has few stacks, one of them called by a rule below
// (else its frames are the state itself), and few context-dependent tokens to check. Returns
// false, having written nothing to `out`, when the walk should be used.
bool MaskComputer::combine_frames(int state, TokenMask& out) {
  // A copy: computing frame masks adds parser states, which may move the state's stacks.
  const std::vector<int> stacks = parser_->stacks(state);
  if (stacks.size() > kMaxFrames ||
      std::none_of(stacks.begin(), stacks.end(), [&](int s) { return parser_->has_caller(s); }))
    return false;
  // A state's missing frame masks are computed when it is first seen, not left to a walk: a
  // walk from a state of several stacks creates a new parser state at almost every trie node
  // it enters, and costs more than the walks from lone-frame states, which later states share.
  frames_.clear();
  for (const int s : stacks) frames_.push_back(parser_->top_frame_state(s));
  // Stacks that differ only below their top share a frame: its mask is ORed once.
  std::sort(frames_.begin(), frames_.end());
  frames_.erase(std::unique(frames_.begin(), frames_.end()), frames_.end());
  std::vector<const FrameMask*> parts;
  std::size_t dependent = 0;
  for (const int f : frames_) {
    const FrameMask& part = frame_mask(f);
    dependent += part.num_context_dependent;
    if (dependent > kMaxContextDependent) return false;
    parts.push_back(&part);
  }
  end_nodes_.clear();
  for (const FrameMask* part : parts) {
    for (std::size_t w = 0; w < out.words.size(); ++w) out.words[w] |= part->allowed.words[w];
    end_nodes_.insert(end_nodes_.end(), part->ends.begin(), part->ends.end());
  }
  // The context-dependent tokens lie below the nodes where some frame's rule ends: each such
  // subtree (an outermost one, once) is walked from the whole state after the node's prefix,
  // which gives every token below it exactly; a prefix shared by many tokens (a space, a
  // closing quote) is stepped once, and a dead one prunes its subtree.
  std::sort(end_nodes_.begin(), end_nodes_.end(), [&](std::uint32_t a, std::uint32_t b) {
    return trie_->lo_[a] != trie_->lo_[b] ? trie_->lo_[a] < trie_->lo_[b]
                                          : trie_->hi_[a] > trie_->hi_[b];
  });
  std::uint32_t covered = 0;  // the end of the last subtree walked, in trie order
  for (const std::uint32_t n : end_nodes_) {
    if (trie_->lo_[n] < covered) continue;  // below (or equal to) a node walked already
    covered = trie_->hi_[n];
    // The node's prefix: the first bytes of any token below it.
    const std::string_view below =
        (*token_bytes_)[static_cast<std::size_t>(trie_->sorted_[trie_->lo_[n]])];
    const int next = parser_->advance(state, below.substr(0, trie_->depth_[n]));
    if (next == PushdownParser::kDead) continue;
    for (std::uint32_t k = trie_->first_token_[n]; k < trie_->first_token_[n + 1]; ++k)
      out.allow(trie_->token_ids_[k]);
    if (parser_->can_continue(next)) walk(n, next, out);
  }
  return true;
}

// The parts of the mask of one top frame: a walk from its lone-frame state, in which reaching
// the end of the input means leaving the frame's rule, so that enter() sorts those tokens out.
const MaskComputer::FrameMask& MaskComputer::frame_mask(int frame_state) {
  const auto f = static_cast<std::size_t>(frame_state);
  if (f >= frame_cache_.size()) frame_cache_.resize(f + 1);
  if (!frame_cache_[f]) {
    const std::size_t words = (static_cast<std::size_t>(trie_->vocab_size()) + 63) / 64;
    auto part = std::make_unique<FrameMask>();
    part->allowed.words.assign(words, 0);
    struct Marking {  // frame_ends_ points at the frame's list only during this walk
      std::vector<std::uint32_t>*& slot;
      ~Marking() { slot = nullptr; }
    } marking{frame_ends_};
    frame_ends_ = &part->ends;
    walk(0, frame_state, part->allowed);
    for (const std::uint32_t n : part->ends) {
      for (std::uint32_t i = trie_->lo_[n]; i < trie_->hi_[n]; ++i)
        part->num_context_dependent += !part->allowed.allowed(trie_->sorted_[i]);
    }
    ++num_frame_masks_;
    frame_cache_[f] = std::move(part);
  }
  return *frame_cache_[f];
}

bool MaskComputer::cached(int state) const {
  return state >= 0 && static_cast<std::size_t>(state) < cache_.size() &&
         cache_[static_cast<std::size_t>(state)];
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
