#pragma once
// A regex parsed into a tree over code point classes (regex.cpp). Two back ends read it: the
// grammar expressions of compile_regex (regex.cpp), and the code point automata of
// compile_string_language (string_language.cpp), which intersect a pattern, a format and the
// length bounds of one JSON string.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace inferlab::regex_tree {

/// Inclusive code point ranges, sorted and disjoint.
using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

/// The largest code point.
constexpr std::uint32_t kMaxCodePoint = 0x10FFFF;

/// A node kind of the parse tree.
enum class NodeKind {
  empty,   // the empty string
  chars,   // one code point of `chars`
  seq,     // the children one after another
  alt,     // any one of the children
  repeat,  // the child repeated min..max times (max = -1: unbounded)
};

/// One node; nodes refer to their children by index into RegexTree::nodes.
struct Node {
  NodeKind kind = NodeKind::empty;
  Ranges chars;
  std::vector<int> children;
  int min = 0;
  int max = -1;
};

/// A parsed regex: the nodes, and the root (with search semantics, the body already wrapped
/// in any-character runs on each side that is not anchored).
struct RegexTree {
  std::vector<Node> nodes;
  int root = -1;
};

/// Parses @p pattern; @p search as compile_regex()'s.
/// @throws inferlab::Error "regex error at position N: ..." (N counts bytes from 0).
RegexTree parse_regex(std::string_view pattern, bool search);

}  // namespace inferlab::regex_tree
