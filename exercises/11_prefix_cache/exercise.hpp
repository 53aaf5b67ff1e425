#pragma once
/// @file exercises/11_prefix_cache/exercise.hpp
/// @brief Exercise 11: a prefix cache with LRU eviction (chapter 06). A radix tree of token
/// sequences: find how many leading tokens of a prompt are already cached, store a prompt, and
/// keep at most `max_entries` entries by evicting the least recently used leaves.
///
/// The model of the exercise. The cache is a tree whose root stands for the empty sequence.
/// Every other node carries a non-empty *edge*, the tokens between its parent and itself; the
/// tokens on the path from the root to a node spell the node's *sequence*. The edges leaving a
/// node start with different tokens, so a sequence has at most one way down the tree.
///
/// **An entry is one node other than the root.** Nodes are created only where an inserted
/// sequence ends, or where a new sequence leaves an edge in the middle (the edge is split in
/// two there); a match never creates one. Each node has a last-use time: `PrefixCache::clock`
/// when an insert or a match last went through it. The cache holds at most `max_entries`
/// nodes; above that, it removes the leaf (a node without children: no other node depends on
/// it) with the oldest last-use time, one at a time. A node is never merged back into its
/// parent: an eviction removes exactly one entry.

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inferlab::ex11 {

/// @brief One node of the radix tree; every node except the root is an entry.
struct Node {
  std::vector<int> edge;  ///< (edge_len) tokens from the parent; empty only at the root
  int parent = -1;        ///< index of the parent in PrefixCache::nodes; -1 at the root
  std::unordered_map<int, int> children;  ///< first token of a child's edge -> child's index
  std::uint64_t last_used = 0;            ///< PrefixCache::clock of the last insert/match using it
};

/// @brief The cache: the tree, the clock, and the leaves in eviction order.
///
/// Invariants the test checks after every call: every node reachable from the root has a
/// non-empty edge (the root excepted), its parent lists it under the first token of its edge,
/// a parent was used no earlier than its children (a use goes through the whole path), `leaves`
/// holds exactly (last_used, index) of every childless entry, and `entries` counts the nodes
/// reachable from the root, the root excepted.
struct PrefixCache {
  std::size_t max_entries = 0;  ///< the bound on `entries`, >= 1
  std::vector<Node> nodes;      ///< nodes[0] is the root; other slots are nodes or free
  std::vector<int> free_slots;  ///< indices of evicted nodes, reused by new ones
  std::set<std::pair<std::uint64_t, int>> leaves;  ///< (last_used, index) of every leaf entry
  std::uint64_t clock = 0;                         ///< +1 on every match and every non-empty insert
  std::size_t entries = 0;                         ///< nodes in the tree, the root excepted
  std::size_t evictions = 0;                       ///< entries removed by evict() so far
};

/// @brief An empty cache (the root alone) that will hold at most @p max_entries entries.
/// @throws inferlab::Error if @p max_entries is 0.
PrefixCache make_prefix_cache(std::size_t max_entries);

/// @brief The longest prefix of @p tokens that the cache holds: the largest n such that
/// tokens[0..n) is a prefix of the sequence of some node. Advances the clock, and every node
/// whose edge contributed at least one matched token gets last_used = clock (a node matched
/// only part of the way counts as used). Creates and removes nothing.
/// @param tokens (n) a prompt's token ids; may be empty (the result is then 0)
/// @return the number of leading tokens found, 0 <= result <= n
std::size_t match(PrefixCache& cache, std::span<const int> tokens);

/// @brief Stores @p tokens: walks down as far as the tree already spells them, splits the edge
/// it leaves in the middle (one new node), and adds the rest as a new leaf (one new node), so
/// that a node's sequence equals @p tokens afterwards. If @p tokens ends inside an edge, that
/// split alone is the new node; if it ends at a node, nothing is created. Advances the clock,
/// sets last_used = clock on every node of the path from the root to that node, then calls
/// evict(). Storing an empty sequence does nothing.
/// @param tokens (n) the token ids to cache
void insert(PrefixCache& cache, std::span<const int> tokens);

/// @brief While the cache holds more than max_entries entries, removes the leaf with the
/// oldest last_used (its parent may become a leaf, and evictable, in turn).
/// @note O(log entries) per removed entry when `leaves` is kept up to date.
void evict(PrefixCache& cache);

}  // namespace inferlab::ex11
