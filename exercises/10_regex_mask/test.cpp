// Exercise 10's test: the DFA accepts exactly what std::regex matches (every string up to
// length 6 over the patterns' alphabet, for fixed and random patterns), and the trie-walk mask
// equals a brute-force oracle (every token stepped byte by byte) from every reachable state,
// leaves out tokens that enter a trap state of a hand-made DFA, and costs at most one step per
// trie edge it visits (Dfa::step counts them), which a token-by-token mask exceeds ninefold.
#include <regex>
#include <set>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace ex = inferlab::ex10;

namespace {

int run(const ex::Dfa& d, int s, const std::string& bytes) {
  for (const char c : bytes) {
    if (s < 0) return -1;
    s = d.next[static_cast<std::size_t>(s)][static_cast<unsigned char>(c)];
  }
  return s;
}

// Live states, computed here independently: reverse reachability from the accepting states.
std::vector<bool> live_states(const ex::Dfa& d) {
  const std::size_t n = d.next.size();
  std::vector<std::vector<int>> rev(n);
  for (std::size_t s = 0; s < n; ++s) {
    for (const int t : d.next[s]) {
      if (t >= 0) rev[static_cast<std::size_t>(t)].push_back(static_cast<int>(s));
    }
  }
  std::vector<bool> live(n, false);
  std::vector<int> work;
  for (std::size_t s = 0; s < n; ++s) {
    if (d.accepting[s]) {
      live[s] = true;
      work.push_back(static_cast<int>(s));
    }
  }
  while (!work.empty()) {
    const int t = work.back();
    work.pop_back();
    for (const int s : rev[static_cast<std::size_t>(t)]) {
      if (!live[static_cast<std::size_t>(s)]) {
        live[static_cast<std::size_t>(s)] = true;
        work.push_back(s);
      }
    }
  }
  return live;
}

// The specification of the mask: each token's bytes, one by one.
std::vector<bool> oracle(const ex::Dfa& d, int state, const std::vector<std::string>& tokens) {
  const std::vector<bool> live = live_states(d);
  std::vector<bool> out(tokens.size(), false);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    int s = state;
    bool ok = !tokens[t].empty();
    for (const char c : tokens[t]) {
      s = s < 0 ? -1 : d.next[static_cast<std::size_t>(s)][static_cast<unsigned char>(c)];
      if (s < 0 || !live[static_cast<std::size_t>(s)]) {
        ok = false;
        break;
      }
    }
    out[t] = ok;
  }
  return out;
}

std::vector<std::string> strings_up_to(const std::string& alphabet, std::size_t n) {
  std::vector<std::string> out{""};
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].size() < n) {
      for (const char c : alphabet) out.push_back(out[i] + c);
    }
  }
  return out;
}

// A random pattern over {a, b, c} with the subset's operators.
std::string random_pattern(inferlab::Rng& rng, int depth) {
  const auto r = rng.next_u32() % (depth > 2 ? 3 : 7);
  const char* atoms[] = {"a", "b", "c", "[ab]", "."};
  switch (r) {
    case 0:
    case 1:
    case 2:
      return atoms[rng.next_u32() % 5];
    case 3:
      return random_pattern(rng, depth + 1) + random_pattern(rng, depth + 1);
    case 4:
      return "(" + random_pattern(rng, depth + 1) + "|" + random_pattern(rng, depth + 1) + ")";
    case 5:
      return "(" + random_pattern(rng, depth + 1) + ")" + std::string(1, "*+?"[rng.next_u32() % 3]);
    default:
      return random_pattern(rng, depth + 1) + random_pattern(rng, depth + 1);
  }
}

const std::vector<std::string> kTokens = {"a",   "b", "c", "ab",  "ba", "abc", "cc", "aaa",
                                          "bca", "x", "",  "cab", "bb", "acb", "-",  "a-"};

void check_pattern(const std::string& pat) {
  INFO("pattern " << pat);
  const ex::Dfa d = ex::compile_dfa(pat);
  REQUIRE(!d.next.empty());
  REQUIRE(d.next.size() == d.accepting.size());
  const std::regex re(pat);
  int matched = 0;
  for (const auto& s : strings_up_to("abc-", 6)) {
    INFO("string '" << s << "'");
    const int end = run(d, 0, s);
    const bool dfa_accepts = end >= 0 && d.accepting[static_cast<std::size_t>(end)];
    REQUIRE(dfa_accepts == std::regex_match(s, re));
    matched += dfa_accepts;
    // The mask from every state the DFA reaches equals the oracle's.
    if (end >= 0) REQUIRE(ex::allowed_tokens(d, end, kTokens) == oracle(d, end, kTokens));
  }
  REQUIRE(matched > 0);
}

}  // namespace

TEST_CASE("the DFA matches what std::regex matches; the mask equals the oracle", "[exercise]") {
  for (const char* pat : {"abc", "a(b|c)*", "[a-c]+-?", "(ab|a)(c|bc)", "a?b+c*", ".c",
                          "(a|b|c)*a(a|b)", "((a|b)c)*", "[ab]*(-[c]+)?"}) {
    check_pattern(pat);
  }
}

TEST_CASE("random patterns: DFA and mask agree with the references", "[exercise]") {
  inferlab::Rng rng(8);
  for (int i = 0; i < 60; ++i) {
    std::string pat = random_pattern(rng, 0);
    // Make sure the pattern matches something of length <= 6 (random ones always do here).
    check_pattern(pat);
  }
}

TEST_CASE("the mask leaves out tokens that enter a trap state (not -1, but dead)", "[exercise]") {
  // Hand-made: state 0 loops on 'a', goes to the accepting state 1 on 'b' and to the trap 2 on
  // 'c'; state 1 loops on 'b'; the trap loops on every byte and never accepts.
  ex::Dfa d;
  d.next.resize(3);
  for (auto& row : d.next) row.fill(-1);
  d.next[0]['a'] = 0;
  d.next[0]['b'] = 1;
  d.next[0]['c'] = 2;
  d.next[1]['b'] = 1;
  d.next[2].fill(2);
  d.accepting = {false, true, false};
  for (int state : {0, 1, 2}) {
    INFO("state " << state);
    const std::vector<bool> mask = ex::allowed_tokens(d, state, kTokens);
    REQUIRE(mask == oracle(d, state, kTokens));
  }
  // From the start, "c", "cc" and "cab" enter the trap: none of them may be allowed.
  const std::vector<bool> mask = ex::allowed_tokens(d, 0, kTokens);
  for (std::size_t t = 0; t < kTokens.size(); ++t) {
    INFO("token '" << kTokens[t] << "'");
    if (!kTokens[t].empty() && kTokens[t][0] == 'c') CHECK(!mask[t]);
  }
}

TEST_CASE("the mask walks a trie: at most one step per trie edge", "[exercise]") {
  // Every string of 1 to 12 letters over {a, b}: 8,190 tokens, 90,114 bytes, and a trie of
  // 8,190 edges. Under [ab]*c every prefix is live, so the walk visits every edge once; a mask
  // that steps each token's bytes on its own takes 90,114 steps.
  const std::vector<std::string> vocab = [] {
    std::vector<std::string> v = strings_up_to("ab", 12);
    v.erase(v.begin());  // the empty string
    return v;
  }();
  const ex::Dfa d = ex::compile_dfa("[ab]*c");
  const std::vector<bool> live = live_states(d);
  // The edges a pruned walk from state 0 visits: (prefix, next byte) pairs whose prefix is live.
  std::set<std::string> edges;
  for (const std::string& token : vocab) {
    for (std::size_t k = 0; k < token.size(); ++k) {
      const int s = run(d, 0, token.substr(0, k));
      if (s < 0 || !live[static_cast<std::size_t>(s)]) break;
      edges.insert(token.substr(0, k + 1));
    }
  }
  // Finding the live states may step too: a fixpoint over every (state, byte), once per state.
  const std::size_t states = d.next.size();
  const std::size_t bound = edges.size() + 256 * states * (states + 1);
  d.steps_taken = 0;
  const std::vector<bool> mask = ex::allowed_tokens(d, 0, vocab);
  REQUIRE(mask == oracle(d, 0, vocab));
  INFO("steps " << d.steps_taken << ", trie edges " << edges.size() << ", bound " << bound);
  CHECK(d.steps_taken <= bound);
}

TEST_CASE("syntax errors are errors", "[exercise]") {
  for (const char* bad : {"a(b", "ab)", "*a", "[ab", "a|*"}) {
    INFO(bad);
    CHECK_THROWS_AS(ex::compile_dfa(bad), inferlab::Error);
  }
}
