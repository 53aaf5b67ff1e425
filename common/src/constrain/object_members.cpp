// The members of a JSON object: in any order, in a fixed order, and the keys outside a list.
#include "inferlab/constrain/object_members.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/utf8.hpp"
#include "inferlab/constrain/regex.hpp"

namespace inferlab {

int members_in_any_order(Grammar& g, const std::vector<int>& members,
                         const std::vector<bool>& optional, int extra, int separator,
                         const std::vector<std::uint64_t>& needs, int min_members,
                         int max_members) {
  MemberSet set;
  set.members = members;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!optional[i]) set.required |= std::uint64_t{1} << i;
  }
  set.needs = needs;
  set.extra = extra;
  set.separator = separator;
  set.min_members = min_members;
  set.max_members = max_members;
  return g.members_in_any_order(fmt::format("members{}", g.rules.size()), std::move(set));
}

int members_in_order(Grammar& g, const std::vector<int>& members, const std::vector<bool>& optional,
                     int extra, const std::function<int()>& separator) {
  const std::size_t n = members.size();
  // first[i]: members i.. when none has been written yet; after[i]: when one has. Each is
  // used twice by the one before it: a rule of its own (called, not copied), else the
  // automaton would double with every optional member.
  const std::string base = "in_order" + std::to_string(g.rules.size());
  const auto shared = [&](const std::string& name, int expr) {
    const int rule = g.add_rule(base + name);
    g.define(rule, expr);
    return g.ref(rule);
  };
  std::vector<int> first(n + 1), after(n + 1);
  const int extras_after = extra >= 0 ? g.repeat(g.seq({separator(), extra}), 0, -1) : g.empty();
  after[n] = extras_after;
  first[n] = extra >= 0 ? g.repeat(g.seq({extra, extras_after}), 0, 1) : g.empty();
  for (std::size_t i = n; i-- > 0;) {
    const int with = g.seq({separator(), members[i], after[i + 1]});
    after[i] = optional[i] ? g.alt({with, after[i + 1]}) : with;
    const int with_first = g.seq({members[i], after[i + 1]});
    first[i] = optional[i] ? g.alt({with_first, first[i + 1]}) : with_first;
    if (i > 0) {
      after[i] = shared(fmt::format("_after{}", i), after[i]);
      first[i] = shared(fmt::format("_first{}", i), first[i]);
    }
  }
  return first[0];
}

int key_other_than(Grammar& g, const std::vector<std::string>& names, FreeKeyRules* shared) {
  struct Node {
    std::vector<std::pair<std::uint32_t, int>> next;  // (code point, child node), sorted
    bool end = false;                                 // a name ends here
    int depth = 0;                                    // characters from the root
  };
  std::vector<Node> trie(1);
  for (const auto& name : names) {
    int t = 0;
    for (std::size_t i = 0; i < name.size();) {
      // Names come from parsed JSON, which is valid UTF-8; a stray byte would be its own key.
      const Utf8Char c = decode_utf8(name, i);
      const std::uint32_t cp = c.length > 0 ? c.code_point : static_cast<unsigned char>(name[i]);
      i += c.length > 0 ? static_cast<std::size_t>(c.length) : 1;
      auto& next = trie[static_cast<std::size_t>(t)].next;
      const auto found = std::lower_bound(
          next.begin(), next.end(), cp, [](const auto& e, std::uint32_t x) { return e.first < x; });
      if (found != next.end() && found->first == cp) {
        t = found->second;
        continue;
      }
      const int child = static_cast<int>(trie.size());
      next.emplace(found, cp, child);
      const int depth = trie[static_cast<std::size_t>(t)].depth + 1;
      trie.emplace_back();  // (after the insertion: it invalidates `next`)
      trie.back().depth = depth;
      t = child;
    }
    trie[static_cast<std::size_t>(t)].end = true;
  }
  FreeKeyRules own;
  FreeKeyRules& rules = shared ? *shared : own;
  // Names are mostly plain ASCII (printable, not '"' or '\\', one raw byte each). A node whose
  // next characters are all plain leaves the trie with a plain byte outside them, or with any
  // other character (an escape, a multi-byte one), which is the same for every such node: one
  // shared rule, called last, instead of a copy of the whole UTF-8 and escape automaton in
  // every node of the trie.
  ByteSet plain;
  plain.add_range(0x20, 0x7F);
  plain.remove('"');
  plain.remove('\\');
  // One rule for the free tail, called last (a tail call, see parser_impl.hpp): wherever the key
  // leaves the names' trie, it continues in the same states. Its characters are the ones
  // json_string_chars spells for all code points, in its parts, which the other characters'
  // rule shares (expressions never change once made).
  if (rules.tail < 0) {
    rules.non_ascii = utf8_range(g, 0x80, 0x10FFFF);
    rules.escaped = json_string_chars(g, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true);
    const int any_char = g.alt({rules.non_ascii, g.bytes(plain), rules.escaped});
    rules.tail = g.add_rule(fmt::format("key{}_tail", g.rules.size()));
    g.define(rules.tail, g.seq({g.repeat(any_char, 0, -1), g.literal("\"")}));
  }
  const int free_tail = g.ref(rules.tail);
  const auto leave_by_other = [&] {
    if (rules.other < 0) {
      rules.other = g.add_rule(fmt::format("key{}_other", g.rules.size()));
      g.define(rules.other, g.seq({g.alt({rules.non_ascii, rules.escaped}), free_tail}));
    }
    return g.ref(rules.other);
  };
  // Each trie node is reached from its parent alone: its expression is written in place (the
  // children's first, so the nodes go backwards), not as a rule of its own; only every
  // kKeyLevelsPerRule-th level is a rule, which keeps a long name's expression shallow (the
  // parser refuses expressions nested 10000 levels deep).
  constexpr int kKeyLevelsPerRule = 256;
  std::vector<int> node(trie.size());
  for (std::size_t t = trie.size(); t-- > 0;) {
    std::vector<int> alts;
    if (!trie[t].end) alts.push_back(g.literal("\""));
    ByteSet plain_others = plain;
    bool all_plain = true;
    for (const auto& [cp, child] : trie[t].next) {
      // A plain character is its own byte (the byte expression every literal shares).
      const bool is_plain = cp < 0x80 && plain.has(cp);
      const char byte = static_cast<char>(cp);
      const int ch =
          is_plain ? g.literal(std::string_view(&byte, 1)) : json_string_chars(g, {{cp, cp}}, true);
      alts.push_back(g.seq({ch, node[static_cast<std::size_t>(child)]}));
      all_plain = all_plain && is_plain;
      if (all_plain) plain_others.remove(cp);
    }
    if (all_plain) {
      if (!plain_others.empty()) alts.push_back(g.seq({g.bytes(plain_others), free_tail}));
      alts.push_back(leave_by_other());
    } else {
      CodePointRanges others;
      std::uint32_t next = 0;
      for (const auto& [cp, child] : trie[t].next) {
        if (cp > next) others.emplace_back(next, cp - 1);
        next = cp + 1;
      }
      if (next <= 0x10FFFF) others.emplace_back(next, 0x10FFFF);
      alts.push_back(g.seq({json_string_chars(g, others, true), free_tail}));
    }
    node[t] = g.alt(std::move(alts));
    if (trie[t].depth % kKeyLevelsPerRule == kKeyLevelsPerRule - 1) {
      const int rule = g.add_rule(fmt::format("key{}_{}", g.rules.size(), t));
      g.define(rule, node[t]);
      node[t] = g.ref(rule);
    }
  }
  return g.seq({g.literal("\""), node[0]});
}

}  // namespace inferlab
