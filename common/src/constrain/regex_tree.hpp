#pragma once
/// @file regex_tree.hpp
/// @brief A regex parsed into a tree over code point classes (regex.cpp). Two back ends read
/// it: the grammar expressions of compile_regex() (regex.cpp), and the code point automata of
/// compile_string_language() (string_language.cpp), which intersect a pattern, a format and
/// the length bounds of one JSON string.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace inferlab::regex_tree {

/// @brief Inclusive code point ranges [first, second], sorted and disjoint.
using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

/// @brief The largest code point.
constexpr std::uint32_t kMaxCodePoint = 0x10FFFF;

/// @brief A node kind of the parse tree.
enum class NodeKind {
  empty,   ///< the empty string
  chars,   ///< one code point of Node::chars
  seq,     ///< the children one after another
  alt,     ///< any one of the children
  repeat,  ///< the child repeated min..max times (max = -1: unbounded)
};

/// @brief One node; nodes refer to their children by index into RegexTree::nodes.
struct Node {
  NodeKind kind = NodeKind::empty;  ///< what the node matches
  Ranges chars;                     ///< the class, for NodeKind::chars
  std::vector<int> children;        ///< seq / alt: the children; repeat: the one child
  int min = 0;                      ///< repeat: fewest copies
  int max = -1;                     ///< repeat: most copies, -1 for unbounded
};

/// @brief A parsed regex: its nodes and its root. With search semantics the body is already
/// wrapped in runs of any characters on each side that `^` / `$` do not anchor.
struct RegexTree {
  std::vector<Node> nodes;  ///< every node; children come before their parents
  int root = -1;            ///< the whole regex
};

/// @brief Parses @p pattern (UTF-8); @p search as compile_regex()'s.
/// @throws inferlab::Error "regex error at position N: ..." (N counts bytes from 0).
RegexTree parse_regex(std::string_view pattern, bool search);

}  // namespace inferlab::regex_tree
