#pragma once
/// @file prefix_cache.hpp
/// @brief Reusing the keys and values of prompt prefixes that earlier requests already
/// computed (chapter 06): SGLang's radix trie and vLLM's block hashes, on chapter 05's blocks.
///
/// Many requests begin the same way: a system prompt, few-shot examples, the earlier turns of a
/// chat, a retrieved document. Their keys and values depend only on the tokens before them, so
/// once one request has computed them, the next can start from them and prefill only the rest.
/// A prefix cache remembers which KV blocks hold which token prefixes. It stores nothing itself:
/// the blocks live in the paged pool (PagedKVManager), and the cache holds one reference on
/// every block it remembers, so the block outlives the request that wrote it. When the pool
/// runs short, the cache gives blocks back (evict), least recently used first.
///
/// Two indexes, one interface, so both can run on the same trace:
///  - **RadixPrefixCache** (SGLang's RadixAttention): a trie keyed by token ids, with edges of
///    many tokens. A match is token-exact: a request sharing 1,500 of a cached prompt's 2,000
///    tokens reuses those 1,500, and the edge is split there. The block holding the last
///    matched token may be shared only in part: the new sequence copies it the first time it
///    writes into it (chapter 05's copy-on-write).
///  - **HashPrefixCache** (vLLM's automatic prefix caching): a hash table from (hash of the
///    parent block, this block's tokens) to a physical block, for full blocks only. A match is
///    block-granular: a shared prefix of 1,500 tokens with 16-token blocks reuses 1,488.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferlab/runtime/block_allocator.hpp"

namespace inferlab {

/// @brief Which prefix cache, if any.
enum class PrefixCacheKind {
  off,    ///< no cache: every prompt is prefilled whole
  radix,  ///< RadixPrefixCache: token-granular trie
  hash,   ///< HashPrefixCache: full blocks, chained hashes
};
/// @brief "off", "radix" or "hash".
const char* prefix_cache_name(PrefixCacheKind kind);
/// @brief Parses "off", "radix" or "hash". @throws inferlab::Error naming the choices.
PrefixCacheKind parse_prefix_cache(const std::string& name);

/// @brief The salt of a tenant's cache entries: 0 for "" (no isolation), else a hash of the
/// name. Entries with different salts never match each other.
std::uint64_t tenant_salt(const std::string& tenant);

/// @brief What match() found.
struct PrefixMatch {
  int tokens = 0;           ///< positions of the query whose keys and values are cached
  std::vector<int> blocks;  ///< ceil(tokens / block_size) physical blocks, logical order
  /// Names the matched entry for lock() / unlock() (0: nothing matched).
  std::uint64_t handle = 0;
};

/// @brief One node of the radix trie, for drawing it (chapter 06's plot).
struct TrieNodeView {
  int id = 0;       ///< its index in the list (the root is 0)
  int parent = -1;  ///< the parent's index (-1 for the root)
  int depth = 0;    ///< tokens from the root to the node's first token
  int tokens = 0;   ///< tokens on the edge into it
  int hits = 0;     ///< matches that used this node
  int locks = 0;    ///< running requests pinning it
};

/// @brief The interface the KV manager talks to.
///
/// Every method takes the query's salt (tenant_salt()): entries inserted under one salt are
/// invisible to another.
class PrefixCache {
 public:
  /// @param allocator the pool's reference counts (must outlive the cache)
  /// @param block_size positions per block of that pool (>= 1)
  PrefixCache(BlockAllocator& allocator, int block_size);
  virtual ~PrefixCache() = default;
  PrefixCache(const PrefixCache&) = delete;             ///< holds references: never copied
  PrefixCache& operator=(const PrefixCache&) = delete;  ///< see PrefixCache(const PrefixCache&)

  /// @brief "radix" or "hash".
  virtual const char* name() const = 0;
  /// @brief Length of the longest cached prefix of @p tokens, at most @p max_tokens, without
  /// changing anything (the scheduler asks this of every waiting request).
  virtual int peek(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const = 0;
  /// @brief The longest cached prefix of @p tokens, at most @p max_tokens: its length, its
  /// blocks, and a handle. Marks the entries used now (recency) and counts a hit on them.
  /// The caller retains the blocks it puts in a block table.
  virtual PrefixMatch match(std::span<const int> tokens, int max_tokens, std::uint64_t salt) = 0;
  /// @brief Remembers that @p blocks (ceil(tokens.size() / block_size) of them) hold the keys
  /// and values of @p tokens; takes a reference on each block it stores. Parts already cached
  /// keep their blocks.
  /// @return a handle of the entry that ends at the last inserted token, for lock() (0 when
  /// there is nothing to lock)
  /// @throws inferlab::Error if the number of blocks is wrong.
  virtual std::uint64_t insert(std::span<const int> tokens, std::span<const int> blocks,
                               std::uint64_t salt) = 0;
  /// @brief Pins the entry of @p handle (and, in the trie, its path to the root) so evict()
  /// leaves it alone while a running request uses it. 0 is ignored.
  virtual void lock(std::uint64_t handle) = 0;
  /// @brief Undoes one lock() of @p handle. 0 is ignored.
  virtual void unlock(std::uint64_t handle) = 0;
  /// @brief Drops least recently used, unpinned entries that nothing depends on (leaves of the
  /// trie; the deepest blocks of a chain first) until @p blocks blocks have gone back to the
  /// pool's free list or nothing more can go.
  /// @return blocks freed (a dropped entry whose block a running request still holds frees none)
  virtual int evict(int blocks) = 0;
  /// @brief Blocks evict() could free now: held by the cache only, through unpinned entries.
  virtual int evictable_blocks() const = 0;
  /// @brief Distinct blocks the cache holds a reference on.
  virtual int cached_blocks() const = 0;
  /// @brief Entries (trie nodes, or hashed blocks).
  virtual std::size_t entries() const = 0;
  /// @brief The trie of @p salt, root first, each node after its parent (for drawing); empty
  /// for a cache that keeps no trie.
  virtual std::vector<TrieNodeView> view(std::uint64_t salt = 0) const {
    (void)salt;
    return {};
  }

  int block_size() const { return block_size_; }                ///< positions per block
  long long evicted_blocks() const { return evicted_blocks_; }  ///< blocks freed by evict()

 protected:
  BlockAllocator& alloc_;         ///< reference counts shared with the KV manager
  int block_size_;                ///< positions per block
  std::uint64_t clock_ = 0;       ///< the recency clock: +1 at every match and insert
  long long evicted_blocks_ = 0;  ///< running total for evicted_blocks()
};

/// @brief SGLang's RadixAttention index: a trie with multi-token edges.
///
/// A node stands for the tokens on the edge into it, positions [depth, depth + edge length) of
/// every prompt that passes through it; it holds the blocks those positions live in (logical
/// blocks depth / B .. (end - 1) / B). Children are found by their first token. Where a block
/// straddles two nodes, both hold it, and for any prefix the block to read is the one of the
/// deepest node that reaches into it: that node's writer had the same tokens before it.
class RadixPrefixCache final : public PrefixCache {
 public:
  /// @copydoc PrefixCache::PrefixCache
  RadixPrefixCache(BlockAllocator& allocator, int block_size);
  ~RadixPrefixCache() override;
  const char* name() const override { return "radix"; }
  int peek(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const override;
  PrefixMatch match(std::span<const int> tokens, int max_tokens, std::uint64_t salt) override;
  std::uint64_t insert(std::span<const int> tokens, std::span<const int> blocks,
                       std::uint64_t salt) override;
  void lock(std::uint64_t handle) override;
  void unlock(std::uint64_t handle) override;
  int evict(int blocks) override;
  int evictable_blocks() const override;
  int cached_blocks() const override;
  std::size_t entries() const override { return nodes_; }
  std::vector<TrieNodeView> view(std::uint64_t salt = 0) const override;

 private:
  struct Node;
  Node* root(std::uint64_t salt) const;
  Node* split(Node* node, int k);
  void adopt_straddling_block(Node* node, int index, int block);
  void remove_leaf(Node* node);
  // Where a walk from the root of a salt along a query stops: `node` is the deepest node whose
  // whole edge matched (the root when none did; nullptr when the salt has no trie), so its end()
  // tokens matched; `edge` is the child of `node` whose edge matched only its first `into`
  // tokens (nullptr and 0 when the walk stopped between nodes).
  struct Walk {
    Node* node = nullptr;
    Node* edge = nullptr;
    int into = 0;
  };
  Walk descend(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const;
  std::vector<std::unique_ptr<Node>> roots_;  // one trie per salt, found by roots_salt_
  std::vector<std::uint64_t> roots_salt_;
  std::size_t nodes_ = 0;     // all nodes but the roots
  std::uint64_t serial_ = 0;  // creation counter: the last tie-break of eviction
  // evictable_blocks() is asked at every scheduling decision: memoised until a reference count
  // or a lock changes.
  mutable std::uint64_t memo_version_ = ~0ull;
  mutable int memo_evictable_ = 0;
  std::uint64_t lock_version_ = 0;
};

/// @brief vLLM's automatic prefix caching: full blocks indexed by a chained hash.
///
/// Block i of a prompt is keyed by hash(key of block i - 1, its block_size tokens), the first by
/// the salt: equal keys mean equal prefixes, so a lookup walks the prompt block by block until a
/// key is missing. Entries keep their tokens and their parent's key, and a match compares them,
/// so a 64-bit collision can never serve another prefix's keys and values. A block in use by a
/// running request has a reference count above 1, which is what pins it: lock() has nothing
/// left to do.
class HashPrefixCache final : public PrefixCache {
 public:
  /// @copydoc PrefixCache::PrefixCache
  HashPrefixCache(BlockAllocator& allocator, int block_size);
  ~HashPrefixCache() override;
  const char* name() const override { return "hash"; }
  int peek(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const override;
  PrefixMatch match(std::span<const int> tokens, int max_tokens, std::uint64_t salt) override;
  std::uint64_t insert(std::span<const int> tokens, std::span<const int> blocks,
                       std::uint64_t salt) override;
  void lock(std::uint64_t) override {}
  void unlock(std::uint64_t) override {}
  int evict(int blocks) override;
  int evictable_blocks() const override;
  int cached_blocks() const override { return static_cast<int>(entries()); }
  std::size_t entries() const override;

 private:
  struct Table;
  std::unique_ptr<Table> table_;
  mutable std::uint64_t memo_version_ = ~0ull;
  mutable int memo_evictable_ = 0;
};

/// @brief The cache of @p kind over @p allocator (nullptr for PrefixCacheKind::off).
std::unique_ptr<PrefixCache> make_prefix_cache(PrefixCacheKind kind, BlockAllocator& allocator,
                                               int block_size);

}  // namespace inferlab
