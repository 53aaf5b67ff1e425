// Exercise 11, a checked answer: a prefix cache as a radix tree (a trie whose edges hold runs of
// tokens), with LRU eviction of leaves.
//
// Why compressed edges: a cached prompt is hundreds of tokens that mostly nobody else shares. A
// plain trie spends one node (and one hash map) per token; here the unshared tail of a prompt is
// one node, so the tree has at most two nodes per stored prompt and the entry bound counts
// prompts' branches rather than tokens.
//
// Why LRU is cheap: every use refreshes a whole root path with one clock value, so a parent is
// never older than its children and the oldest entry is always a leaf (ties: the leaf is the
// deepest). Only leaves need an ordered index: `leaves`, a std::set by (last_used, index).
#include <algorithm>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex11 {

namespace {

std::size_t uz(int i) { return static_cast<std::size_t>(i); }

bool is_leaf_entry(const PrefixCache& c, int i) {
  return i != 0 && c.nodes[uz(i)].children.empty();
}

// Sets last_used, keeping `leaves` in step when the node is a leaf.
void touch(PrefixCache& c, int i) {
  Node& n = c.nodes[uz(i)];
  if (is_leaf_entry(c, i)) {
    c.leaves.erase({n.last_used, i});
    c.leaves.insert({c.clock, i});
  }
  n.last_used = c.clock;
}

int new_node(PrefixCache& c) {
  ++c.entries;
  if (!c.free_slots.empty()) {
    const int i = c.free_slots.back();
    c.free_slots.pop_back();
    return i;
  }
  c.nodes.emplace_back();
  return static_cast<int>(c.nodes.size()) - 1;
}

// Tokens shared by an edge and the query from position pos on.
std::size_t common_length(const std::vector<int>& edge, std::span<const int> tokens,
                          std::size_t pos) {
  const std::size_t n = std::min(edge.size(), tokens.size() - pos);
  std::size_t k = 0;
  while (k < n && edge[k] == tokens[pos + k]) ++k;
  return k;
}

// Splits child's edge after k tokens (0 < k < edge length): a new node takes the first k tokens
// and becomes child's parent. The child keeps its index, children and place in `leaves`.
int split(PrefixCache& c, int child, std::size_t k) {
  const int mid = new_node(c);  // may grow `nodes`: no references held across this call
  Node& ch = c.nodes[uz(child)];
  Node& m = c.nodes[uz(mid)];
  m.edge.assign(ch.edge.begin(), ch.edge.begin() + static_cast<std::ptrdiff_t>(k));
  ch.edge.erase(ch.edge.begin(), ch.edge.begin() + static_cast<std::ptrdiff_t>(k));
  m.parent = ch.parent;
  m.last_used = ch.last_used;
  m.children = {{ch.edge.front(), child}};
  ch.parent = mid;
  c.nodes[uz(m.parent)].children[m.edge.front()] = mid;
  return mid;
}

}  // namespace

PrefixCache make_prefix_cache(std::size_t max_entries) {
  if (max_entries < 1) throw Error("prefix cache: max_entries must be at least 1, got 0");
  PrefixCache c;
  c.max_entries = max_entries;
  c.nodes.emplace_back();  // the root: the empty sequence, never an entry
  return c;
}

std::size_t match(PrefixCache& c, std::span<const int> tokens) {
  ++c.clock;
  int node = 0;
  std::size_t pos = 0;
  while (pos < tokens.size()) {
    const auto it = c.nodes[uz(node)].children.find(tokens[pos]);
    if (it == c.nodes[uz(node)].children.end()) break;
    const int child = it->second;
    const std::size_t k = common_length(c.nodes[uz(child)].edge, tokens, pos);
    touch(c, child);  // k >= 1: the first token matched when the child was found
    pos += k;
    if (k < c.nodes[uz(child)].edge.size()) break;  // the query leaves the edge in the middle
    node = child;
  }
  return pos;
}

void insert(PrefixCache& c, std::span<const int> tokens) {
  if (tokens.empty()) return;
  ++c.clock;
  int node = 0;
  std::size_t pos = 0;
  while (pos < tokens.size()) {
    const auto it = c.nodes[uz(node)].children.find(tokens[pos]);
    if (it == c.nodes[uz(node)].children.end()) {
      // The rest is new: one leaf. Its parent stops being a leaf (if it was one).
      const bool parent_was_leaf = is_leaf_entry(c, node);
      const int leaf = new_node(c);
      Node& l = c.nodes[uz(leaf)];
      l.edge.assign(tokens.begin() + static_cast<std::ptrdiff_t>(pos), tokens.end());
      l.parent = node;
      l.last_used = c.clock;
      c.nodes[uz(node)].children[tokens[pos]] = leaf;
      if (parent_was_leaf) c.leaves.erase({c.nodes[uz(node)].last_used, node});
      c.leaves.insert({c.clock, leaf});
      break;
    }
    int child = it->second;
    const std::size_t k = common_length(c.nodes[uz(child)].edge, tokens, pos);
    if (k < c.nodes[uz(child)].edge.size()) child = split(c, child, k);  // ends or leaves mid-edge
    touch(c, child);
    pos += k;
    node = child;
  }
  evict(c);
}

void evict(PrefixCache& c) {
  while (c.entries > c.max_entries) {
    // entries > 0, so the tree has a leaf: `leaves` is not empty.
    const int leaf = c.leaves.begin()->second;
    c.leaves.erase(c.leaves.begin());
    Node& l = c.nodes[uz(leaf)];
    const int parent = l.parent;
    c.nodes[uz(parent)].children.erase(l.edge.front());
    l = Node{};  // frees the edge's tokens now, not when the slot is reused
    c.free_slots.push_back(leaf);
    --c.entries;
    ++c.evictions;
    if (is_leaf_entry(c, parent)) c.leaves.insert({c.nodes[uz(parent)].last_used, parent});
  }
}

}  // namespace inferlab::ex11
