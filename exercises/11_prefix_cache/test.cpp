// Exercise 11's test: match lengths against a brute-force scan of every stored sequence, the LRU
// order in worked scenarios, a brute-force model of the whole contract (entries, last-use times,
// evictions) compared after every call on random runs, the bound max_entries = 500 on a long
// run, and the hit rate on the exercise's workload (1000 requests, 60% of them share one of 5
// common prefixes).
//
// Every random input comes from SplitMix64, written out below: the standard distributions
// (std::uniform_int_distribution...) give different numbers on different standard libraries,
// and the numbers this test expects must not depend on the compiler.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace ex = inferlab::ex11;
using Seq = std::vector<int>;

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state, one add and three xor-shift-multiplies.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) up to a bias of n / 2^64: nothing this test could see.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }  // inclusive
};

std::size_t lcp(const Seq& a, const Seq& b) {
  std::size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return k;
}

bool is_prefix(const Seq& p, const Seq& s) { return p.size() <= s.size() && lcp(p, s) == p.size(); }

std::string show(const Seq& s) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? " " : "") << s[i];
  o << ']';
  return o.str();
}

// The learner's tree read back as {node's sequence -> last_used}, walking from the root and
// checking the structure on the way. Returns a description of the first problem found, or "".
std::string read_tree(const ex::PrefixCache& c, std::map<Seq, std::uint64_t>& out) {
  out.clear();
  if (c.nodes.empty()) return "no root: nodes is empty";
  if (!c.nodes[0].edge.empty()) return "the root has a non-empty edge";
  std::set<std::pair<std::uint64_t, int>> leaves;
  std::vector<std::pair<int, Seq>> stack{{0, {}}};
  std::size_t visited = 0;
  while (!stack.empty()) {
    const auto [i, seq] = stack.back();
    stack.pop_back();
    if (++visited > c.nodes.size()) return "the tree has a cycle";
    const ex::Node& n = c.nodes[static_cast<std::size_t>(i)];
    for (const auto& [token, child] : n.children) {
      if (child <= 0 || static_cast<std::size_t>(child) >= c.nodes.size())
        return "node " + show(seq) + " lists child index " + std::to_string(child);
      const ex::Node& ch = c.nodes[static_cast<std::size_t>(child)];
      if (ch.edge.empty()) return "a child of " + show(seq) + " has an empty edge";
      if (ch.edge.front() != token)
        return "a child of " + show(seq) + " is listed under token " + std::to_string(token) +
               " but its edge starts with " + std::to_string(ch.edge.front());
      if (ch.parent != i) return "a child of " + show(seq) + " names another parent";
      if (i != 0 && ch.last_used > n.last_used)
        return "node " + show(seq) + " was used before its child (a use goes through the path)";
      Seq longer = seq;
      longer.insert(longer.end(), ch.edge.begin(), ch.edge.end());
      stack.emplace_back(child, std::move(longer));
    }
    if (i != 0) {
      out[seq] = n.last_used;
      if (n.children.empty()) leaves.insert({n.last_used, i});
    }
  }
  if (out.size() != c.entries)
    return "entries is " + std::to_string(c.entries) + " but the tree holds " +
           std::to_string(out.size());
  if (c.nodes.size() != c.entries + 1 + c.free_slots.size())
    return "a slot is neither in the tree nor in free_slots (" + std::to_string(c.nodes.size()) +
           " slots, " + std::to_string(c.entries) + " entries + the root, " +
           std::to_string(c.free_slots.size()) + " free)";
  if (leaves != c.leaves)
    return "`leaves` is not exactly {(last_used, index)} of the childless entries";
  if (c.entries > c.max_entries)
    return std::to_string(c.entries) +
           " entries, above max_entries = " + std::to_string(c.max_entries);
  return "";
}

std::map<Seq, std::uint64_t> tree_of(const ex::PrefixCache& c) {
  std::map<Seq, std::uint64_t> out;
  const std::string problem = read_tree(c, out);
  INFO(problem);
  REQUIRE(problem.empty());
  return out;
}

std::set<Seq> sequences(const ex::PrefixCache& c) {
  std::set<Seq> s;
  for (const auto& [seq, t] : tree_of(c)) s.insert(seq);
  return s;
}

// The contract of exercise.hpp restated over the set of node sequences, with no tree at all:
// every operation scans every node. Slow (entries x length per call) and obviously right.
struct Model {
  std::size_t max_entries;
  std::map<Seq, std::uint64_t> nodes;  // node's sequence -> last_used
  std::uint64_t clock = 0;
  std::size_t evictions = 0;

  std::size_t longest(const Seq& q) const {
    std::size_t best = 0;
    for (const auto& [b, t] : nodes) best = std::max(best, lcp(b, q));
    return best;
  }

  std::size_t match(const Seq& q) {
    ++clock;
    const std::size_t n = longest(q);
    if (n == 0) return 0;
    // Used: the nodes on the path to x = q[0..n), and if x ends inside an edge, the node whose
    // edge that is: the shortest node that extends x.
    const Seq x(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(n));
    const Seq* partial = nullptr;
    for (auto& [b, t] : nodes) {
      if (is_prefix(b, x))
        t = clock;
      else if (is_prefix(x, b) && (!partial || b.size() < partial->size()))
        partial = &b;
    }
    if (!nodes.count(x) && partial) nodes[*partial] = clock;
    return n;
  }

  void insert(const Seq& s) {
    if (s.empty()) return;
    ++clock;
    // The walk leaves the tree after m tokens: a node ends there (or the edge is split there),
    // and s ends at a node (a new leaf, or the split itself when m == |s|).
    const std::size_t m = longest(s);
    if (m > 0) nodes.emplace(Seq(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(m)), clock);
    nodes.emplace(s, clock);
    for (auto& [b, t] : nodes)
      if (is_prefix(b, s)) t = clock;
    evict();
  }

  void evict() {
    while (nodes.size() > max_entries) {
      // In lexicographic order a node's extensions follow it at once: b is a leaf iff the next
      // sequence does not start with b.
      auto oldest = nodes.end();
      for (auto it = nodes.begin(); it != nodes.end(); ++it) {
        const auto next = std::next(it);
        if (next != nodes.end() && is_prefix(it->first, next->first)) continue;
        // Two leaves never share a last-use time: one call uses one root path.
        REQUIRE((oldest == nodes.end() || oldest->second != it->second));
        if (oldest == nodes.end() || it->second < oldest->second) oldest = it;
      }
      nodes.erase(oldest);
      ++evictions;
    }
  }
};

// A random sequence over a small alphabet, often an extension or a cut of one seen before, so
// that the walks share prefixes, split edges and stop inside them.
Seq random_sequence(SplitMix64& rng, const std::vector<Seq>& seen, int vocab, int max_len) {
  Seq s;
  if (!seen.empty() && rng.below(10) < 7) {
    const Seq& base = seen[static_cast<std::size_t>(rng.below(static_cast<int>(seen.size())))];
    s.assign(base.begin(), base.begin() + rng.between(0, static_cast<int>(base.size())));
  }
  const int extra = rng.between(0, max_len / 2);
  for (int i = 0; i < extra && static_cast<int>(s.size()) < max_len; ++i)
    s.push_back(rng.below(vocab));
  return s;
}

// One random run against the model: `ops` calls, each an insert or a match, the whole tree
// compared with the model every `compare_every` calls and the bound checked after every call.
// Returns the number of evictions.
std::size_t run_against_model(std::size_t max_entries, int vocab, int max_len, int ops,
                              int compare_every, std::uint64_t seed) {
  ex::PrefixCache cache = ex::make_prefix_cache(max_entries);
  Model model{max_entries, {}};
  SplitMix64 rng{seed};
  std::vector<Seq> seen;
  for (int op = 0; op < ops; ++op) {
    const Seq s = random_sequence(rng, seen, vocab, max_len);
    const bool is_insert = rng.below(100) < 55;
    INFO("max_entries " << max_entries << ", call " << op << ": "
                        << (is_insert ? "insert " : "match ") << show(s));
    if (is_insert) {
      ex::insert(cache, s);
      model.insert(s);
      seen.push_back(s);
    } else {
      REQUIRE(ex::match(cache, s) == model.match(s));
    }
    REQUIRE(cache.entries <= max_entries);
    if (op % compare_every == 0 || op == ops - 1) {
      REQUIRE(tree_of(cache) == model.nodes);  // the same entries, each with the same last use
      REQUIRE(cache.evictions == model.evictions);
    }
  }
  return model.evictions;
}

}  // namespace

TEST_CASE("exercise 11: a fresh cache, empty inputs, splits, and a bad bound", "[exercise]") {
  CHECK_THROWS_AS(ex::make_prefix_cache(0), inferlab::Error);
  ex::PrefixCache c = ex::make_prefix_cache(10);
  CHECK(ex::match(c, Seq{}) == 0);
  CHECK(ex::match(c, Seq{1, 2}) == 0);
  ex::insert(c, Seq{});
  CHECK(c.entries == 0);  // the root is not an entry

  ex::insert(c, Seq{1, 2, 3});
  CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}});  // one node, one edge of three tokens
  CHECK(ex::match(c, Seq{1, 2, 3, 4}) == 3);
  CHECK(ex::match(c, Seq{1, 2}) == 2);  // stops inside the edge
  CHECK(ex::match(c, Seq{1, 9}) == 1);
  CHECK(ex::match(c, Seq{2}) == 0);
  CHECK(c.entries == 1);  // matching creates nothing

  ex::insert(c, Seq{1, 2});  // ends inside the edge: the split is the new node
  CHECK(sequences(c) == std::set<Seq>{{1, 2}, {1, 2, 3}});
  ex::insert(c, Seq{1, 2});  // already a node: nothing new
  CHECK(c.entries == 2);
  ex::insert(c, Seq{1, 5, 6});  // leaves the edge [1 2] after one token: split + leaf
  CHECK(sequences(c) == std::set<Seq>{{1}, {1, 2}, {1, 2, 3}, {1, 5, 6}});
  ex::insert(c, Seq{1, 2, 3, 7});  // continues below a leaf: one new leaf
  CHECK(sequences(c) == std::set<Seq>{{1}, {1, 2}, {1, 2, 3}, {1, 2, 3, 7}, {1, 5, 6}});
  CHECK(ex::match(c, Seq{1, 2, 3, 7, 8}) == 4);
  CHECK(ex::match(c, Seq{1, 5}) == 2);
  CHECK(c.evictions == 0);
}

TEST_CASE("exercise 11: match lengths equal a brute-force scan over every stored sequence",
          "[exercise]") {
  // A bound nobody reaches: every sequence inserted stays stored, and the longest prefix the
  // cache can give is the longest common prefix with any of them.
  ex::PrefixCache cache = ex::make_prefix_cache(1'000'000);
  SplitMix64 rng{11};
  std::vector<Seq> stored;
  int inside_edge = 0, at_node = 0, empty_queries = 0, zero = 0;
  for (int round = 0; round < 300; ++round) {
    const Seq s = random_sequence(rng, stored, 3, 12);
    ex::insert(cache, s);
    if (!s.empty()) stored.push_back(s);
    const std::map<Seq, std::uint64_t> nodes = tree_of(cache);
    for (int q = 0; q < 20; ++q) {
      const Seq query = q == 0 ? Seq{} : random_sequence(rng, stored, 3, 14);
      std::size_t expected = 0;
      for (const Seq& t : stored) expected = std::max(expected, lcp(query, t));
      INFO("round " << round << ", query " << show(query));
      REQUIRE(ex::match(cache, query) == expected);
      const Seq x(query.begin(), query.begin() + static_cast<std::ptrdiff_t>(expected));
      if (query.empty())
        ++empty_queries;
      else if (expected == 0)
        ++zero;
      else if (nodes.count(x))
        ++at_node;
      else
        ++inside_edge;
    }
  }
  CHECK(cache.evictions == 0);
  // The inputs reached every case: the walk stopped inside edges, at nodes, and at the root.
  CHECK(inside_edge > 500);
  CHECK(at_node > 500);
  CHECK(zero > 50);
  CHECK(empty_queries >= 300);  // one per round, and the generator's own
}

TEST_CASE("exercise 11: the least recently used leaf goes first, and a match refreshes",
          "[exercise]") {
  SECTION("a match keeps an old entry") {
    ex::PrefixCache c = ex::make_prefix_cache(3);
    ex::insert(c, Seq{1, 2, 3});                 // A
    ex::insert(c, Seq{4, 5, 6});                 // B
    ex::insert(c, Seq{7, 8, 9});                 // C
    CHECK(ex::match(c, Seq{1, 2, 3, 10}) == 3);  // A is now the most recent
    ex::insert(c, Seq{10, 11});                  // 4 entries > 3: B, the oldest, goes
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {7, 8, 9}, {10, 11}});
    CHECK(ex::match(c, Seq{4, 5, 6}) == 0);
    ex::insert(c, Seq{12});  // then C
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {10, 11}, {12}});
    CHECK(c.evictions == 2);
  }
  SECTION("without the match, the first inserted goes first") {
    ex::PrefixCache c = ex::make_prefix_cache(3);
    ex::insert(c, Seq{1, 2, 3});
    ex::insert(c, Seq{4, 5, 6});
    ex::insert(c, Seq{7, 8, 9});
    ex::insert(c, Seq{10, 11});
    CHECK(sequences(c) == std::set<Seq>{{4, 5, 6}, {7, 8, 9}, {10, 11}});
  }
  SECTION("a shared prefix is evictable only after its leaves, and keeps its own recency") {
    ex::PrefixCache c = ex::make_prefix_cache(3);
    ex::insert(c, Seq{1, 2, 3, 4});
    ex::insert(c, Seq{1, 2, 3, 5});  // splits: [1 2 3] with leaves [.. 4] and [.. 5]
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 5}});
    ex::insert(c, Seq{9, 9});  // [1 2 3 4] is the oldest leaf
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {1, 2, 3, 5}, {9, 9}});
    ex::insert(c, Seq{8, 8});  // [1 2 3 5] next; [1 2 3] is a leaf now
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {9, 9}, {8, 8}});
    CHECK(ex::match(c, Seq{1, 2, 3, 7}) == 3);  // the prefix outlived both its leaves
    ex::insert(c, Seq{6, 6});                   // [1 2 3] was just used: [9 9] goes
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3}, {8, 8}, {6, 6}});
  }
  SECTION("a match that stops inside an edge uses that node, and creates nothing") {
    ex::PrefixCache c = ex::make_prefix_cache(2);
    ex::insert(c, Seq{1, 2, 3, 4});
    ex::insert(c, Seq{5, 6});
    CHECK(ex::match(c, Seq{1, 2, 9}) == 2);
    CHECK(c.entries == 2);
    ex::insert(c, Seq{7});  // [5 6] is older than [1 2 3 4], which the match used
    CHECK(sequences(c) == std::set<Seq>{{1, 2, 3, 4}, {7}});
  }
  SECTION("a tiny bound: an insert may evict what it just created, deepest first") {
    ex::PrefixCache c = ex::make_prefix_cache(1);
    ex::insert(c, Seq{1, 2, 3});
    ex::insert(c, Seq{1, 2, 4});  // creates [1 2] and [1 2 4]: 3 entries, 2 must go
    // [1 2 3] is the oldest; then [1 2 4], the only leaf ([1 2] has the same last use, but a
    // child depends on it until [1 2 4] is gone).
    CHECK(sequences(c) == std::set<Seq>{{1, 2}});
    CHECK(c.evictions == 2);
    CHECK(ex::match(c, Seq{1, 2, 4}) == 2);
  }
}

TEST_CASE("exercise 11: random runs agree with a brute-force model of the whole contract",
          "[exercise]") {
  // Small alphabets and bounds: many shared prefixes, splits, evictions of nodes with shared
  // parents, re-inserts of evicted sequences. The tree is compared after every call.
  std::uint64_t seed = 100;
  for (const std::size_t max_entries : {1, 2, 3, 7, 40}) {
    for (const int vocab : {2, 4}) {
      const std::size_t evicted = run_against_model(max_entries, vocab, 10, 1500, 1, ++seed);
      if (max_entries < 40) CHECK(evicted > 100);
    }
  }
}

TEST_CASE("exercise 11: max_entries = 500 holds over a long run", "[exercise]") {
  // 4000 calls of sequences up to 40 tokens over 8 tokens: far more nodes are created than fit.
  // The bound is checked after every call, the whole tree against the model every 50.
  CHECK(run_against_model(500, 8, 40, 4000, 50, 7) > 1000);
}

namespace {

// The exercise's workload. 1000 requests; each is, with probability 60%, one of 5 common prefixes
// (a system prompt, a few-shot template: 64 to 256 tokens) followed by its own 16 to 64 tokens;
// with probability 15%, one of 3 frequently asked prompts of 96 tokens, repeated whole (a
// question many users send word for word); and otherwise 64 to 320 tokens of its own. Token ids
// from a vocabulary of 4096. The repeated prompts are leaves nobody extends: only recency keeps
// them, so a cache that evicts by age of creation (FIFO) loses them while they are in use.
constexpr int kRequests = 1000;
constexpr int kSharedPercent = 60;
constexpr int kRepeatedPercent = 15;
constexpr int kRepeatedPrompts = 3;
constexpr int kRepeatedLength = 96;
constexpr int kVocab = 4096;
constexpr std::array<int, 5> kPrefixLengths = {64, 96, 128, 192, 256};
constexpr int kShortestPrefix = 64;

struct Request {
  Seq prompt;
  int prefix = -1;    // which common prefix it starts with; -1: none
  int repeated = -1;  // which repeated prompt it is; -1: none
};

std::vector<Request> make_workload(std::uint64_t seed) {
  SplitMix64 rng{seed};
  std::array<Seq, kPrefixLengths.size()> prefixes;
  for (std::size_t p = 0; p < prefixes.size(); ++p)
    for (int i = 0; i < kPrefixLengths[p]; ++i) prefixes[p].push_back(rng.below(kVocab));
  std::array<Seq, kRepeatedPrompts> repeated;
  for (Seq& s : repeated)
    for (int i = 0; i < kRepeatedLength; ++i) s.push_back(rng.below(kVocab));
  std::vector<Request> out(kRequests);
  for (Request& r : out) {
    int own = 0;
    const int kind = rng.below(100);
    if (kind >= kSharedPercent && kind < kSharedPercent + kRepeatedPercent) {
      r.repeated = rng.below(kRepeatedPrompts);
      r.prompt = repeated[static_cast<std::size_t>(r.repeated)];
      continue;
    }
    if (kind < kSharedPercent) {
      r.prefix = rng.below(static_cast<int>(prefixes.size()));
      r.prompt = prefixes[static_cast<std::size_t>(r.prefix)];
      own = rng.between(16, 64);
    } else {
      own = rng.between(64, 320);
    }
    for (int i = 0; i < own; ++i) r.prompt.push_back(rng.below(kVocab));
  }
  return out;
}

}  // namespace

TEST_CASE("exercise 11: the seeded workload: every repeat of a prefix or a prompt hits",
          "[exercise]") {
  // Each request is served the way an engine would: match its prompt (the tokens whose KV can be
  // reused), then insert it (its KV is now cached). A request is a *hit* when the match covers at
  // least kShortestPrefix = 64 tokens: for a request with a common prefix, its whole prefix must
  // be found; a request without one cannot find 64 tokens by chance (4096^-64).
  const std::vector<Request> requests = make_workload(2024);
  ex::PrefixCache cache = ex::make_prefix_cache(500);
  std::array<bool, kPrefixLengths.size()> seen{};
  std::array<bool, kRepeatedPrompts> asked{};
  int shared = 0, repeats = 0, hits = 0, unique_hits = 0, repeat_misses = 0;
  long matched_tokens = 0, prompt_tokens = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const std::size_t m = ex::match(cache, r.prompt);
    ex::insert(cache, r.prompt);
    REQUIRE(cache.entries <= 500);
    matched_tokens += static_cast<long>(m);
    prompt_tokens += static_cast<long>(r.prompt.size());
    if (m >= kShortestPrefix) ++hits;
    if (r.repeated >= 0) {
      // Asked every few requests: once cached, it must be found whole each time.
      ++repeats;
      const std::size_t q = static_cast<std::size_t>(r.repeated);
      if (asked[q] && m < r.prompt.size()) {
        ++repeat_misses;
        UNSCOPED_INFO("request " << i << " found " << m << " of the repeated prompt's "
                                 << r.prompt.size() << " tokens");
      }
      asked[q] = true;
      continue;
    }
    if (r.prefix < 0) {
      if (m >= kShortestPrefix) ++unique_hits;
      continue;
    }
    ++shared;
    const std::size_t p = static_cast<std::size_t>(r.prefix);
    // After its first request, a common prefix must be found whole every time: it is used every
    // few requests, so LRU never lets it become the oldest leaf.
    if (seen[p] && m < static_cast<std::size_t>(kPrefixLengths[p])) {
      ++repeat_misses;
      UNSCOPED_INFO("request " << i << " found " << m << " of its prefix's " << kPrefixLengths[p]
                               << " tokens");
    }
    seen[p] = true;
  }
  const double hit_rate = static_cast<double>(hits) / kRequests;
  const double token_hit_rate =
      static_cast<double>(matched_tokens) / static_cast<double>(prompt_tokens);
  std::cout << "exercise 11 workload: " << shared << " of " << kRequests
            << " requests share a prefix, " << repeats << " repeat a prompt; hit rate " << hit_rate
            << " (" << hits << " requests found >= 64 tokens), token hit rate " << token_hit_rate
            << ", " << cache.evictions << " evictions, " << cache.entries
            << " entries at the end\n";
  CHECK(tree_of(cache).size() == cache.entries);
  CHECK(repeat_misses == 0);
  CHECK(unique_hits == 0);  // not 100%: the requests with nothing in common miss
  // Only first sightings miss: the hit rate is the best any cache could reach here.
  CHECK(hits == shared - static_cast<int>(kPrefixLengths.size()) + repeats - kRepeatedPrompts);
  CHECK(hit_rate > 0.7);
  CHECK(cache.evictions >
        100);  // the bound was reached: the hit rate is not that of an unbounded cache
}
