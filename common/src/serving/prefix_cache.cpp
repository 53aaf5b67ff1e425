// Prefix caches over the paged KV pool: SGLang's radix trie and vLLM's chained block hashes.
#include "inferlab/serving/prefix_cache.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <unordered_map>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/units.hpp"

namespace inferlab {

const char* prefix_cache_name(PrefixCacheKind kind) {
  switch (kind) {
    case PrefixCacheKind::radix:
      return "radix";
    case PrefixCacheKind::hash:
      return "hash";
    case PrefixCacheKind::off:
      break;
  }
  return "off";
}

PrefixCacheKind parse_prefix_cache(const std::string& name) {
  if (name == "off") return PrefixCacheKind::off;
  if (name == "radix") return PrefixCacheKind::radix;
  if (name == "hash") return PrefixCacheKind::hash;
  throw Error(fmt::format("unknown prefix cache '{}' (expected radix, hash or off)", name));
}

namespace {
// splitmix64's finaliser: a fast, well-mixed 64-bit hash step.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

std::uint64_t tenant_salt(const std::string& tenant) {
  if (tenant.empty()) return 0;
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the bytes, then mixed
  for (unsigned char c : tenant) h = (h ^ c) * 0x100000001B3ull;
  return mix(h) | 1;  // never 0, the salt of "no tenant"
}

PrefixCache::PrefixCache(BlockAllocator& allocator, int block_size)
    : alloc_(allocator), block_size_(block_size) {
  if (block_size < 1)
    throw Error(fmt::format("prefix cache: block size {} (must be >= 1)", block_size));
}

std::unique_ptr<PrefixCache> make_prefix_cache(PrefixCacheKind kind, BlockAllocator& allocator,
                                               int block_size) {
  switch (kind) {
    case PrefixCacheKind::radix:
      return std::make_unique<RadixPrefixCache>(allocator, block_size);
    case PrefixCacheKind::hash:
      return std::make_unique<HashPrefixCache>(allocator, block_size);
    case PrefixCacheKind::off:
      break;
  }
  return nullptr;
}

// --- radix trie --------------------------------------------------------------------------------

struct RadixPrefixCache::Node {
  std::vector<int> tokens;  // the edge into this node: positions [depth, depth + size)
  std::vector<int> blocks;  // logical blocks depth / B .. (end - 1) / B of those positions
  int depth = 0;
  Node* parent = nullptr;
  std::map<int, std::unique_ptr<Node>> children;  // by first token (ordered: runs repeat)
  int locks = 0;                                  // running requests whose path goes through here
  std::uint64_t last_access = 0;
  int hits = 0;
  std::uint64_t serial = 0;  // creation order, the last tie-break of eviction
  int end() const { return depth + static_cast<int>(tokens.size()); }
};

RadixPrefixCache::RadixPrefixCache(BlockAllocator& allocator, int block_size)
    : PrefixCache(allocator, block_size) {}

RadixPrefixCache::~RadixPrefixCache() {
  // The cache's references go back to the allocator (which outlives it).
  std::vector<Node*> stack;
  for (auto& r : roots_) stack.push_back(r.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (int b : n->blocks) alloc_.release(b);
    for (auto& [first, child] : n->children) stack.push_back(child.get());
  }
}

RadixPrefixCache::Node* RadixPrefixCache::root(std::uint64_t salt) const {
  for (std::size_t i = 0; i < roots_salt_.size(); ++i)
    if (roots_salt_[i] == salt) return roots_[i].get();
  return nullptr;
}

// Cuts `node`'s edge after its first k tokens: a new node takes those k tokens (and the blocks
// they live in) and becomes node's parent. `node` keeps the rest, so a handle to it (a lock)
// stays valid; the new node inherits its locks, since every path through node passes it.
RadixPrefixCache::Node* RadixPrefixCache::split(Node* node, int k) {
  const int B = block_size_;
  auto upper = std::make_unique<Node>();
  Node* up = upper.get();
  up->tokens.assign(node->tokens.begin(), node->tokens.begin() + k);
  up->depth = node->depth;
  up->parent = node->parent;
  up->locks = node->locks;
  up->last_access = node->last_access;
  up->hits = node->hits;
  up->serial = ++serial_;
  const int first = node->depth / B, cut = node->depth + k;
  const int up_last = (cut - 1) / B, low_first = cut / B;
  up->blocks.assign(node->blocks.begin(), node->blocks.begin() + (up_last - first + 1));
  // A block straddling the cut is held by both halves: one more reference.
  if (up_last == low_first) alloc_.retain(node->blocks[std::size_t(low_first - first)]);
  node->blocks.erase(node->blocks.begin(), node->blocks.begin() + (low_first - first));
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + k);
  node->depth = cut;
  Node* parent = node->parent;
  auto& slot = parent->children[up->tokens[0]];
  std::unique_ptr<Node> lower = std::move(slot);
  node->parent = up;
  up->children[node->tokens[0]] = std::move(lower);
  slot = std::move(upper);
  ++nodes_;
  return up;
}

// The one walk of the trie that peek(), match() and insert() share: whole edges while the next
// token names a child, then as far into one more edge as the tokens agree. It changes nothing.
RadixPrefixCache::Walk RadixPrefixCache::descend(std::span<const int> tokens, int max_tokens,
                                                 std::uint64_t salt) const {
  Walk w;
  w.node = root(salt);
  if (!w.node) return w;
  const int limit = std::min(max_tokens, static_cast<int>(tokens.size()));
  int m = 0;
  while (m < limit) {
    const auto it = w.node->children.find(tokens[std::size_t(m)]);
    if (it == w.node->children.end()) break;
    Node* child = it->second.get();
    const int edge = static_cast<int>(child->tokens.size());
    const int cap = std::min(edge, limit - m);
    int k = 0;
    while (k < cap && child->tokens[std::size_t(k)] == tokens[std::size_t(m + k)]) ++k;
    if (k < edge) {
      w.edge = child;
      w.into = k;
      break;
    }
    w.node = child;
    m += k;
  }
  return w;
}

int RadixPrefixCache::peek(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const {
  const Walk w = descend(tokens, max_tokens, salt);
  return w.node ? w.node->end() + w.into : 0;
}

PrefixMatch RadixPrefixCache::match(std::span<const int> tokens, int max_tokens,
                                    std::uint64_t salt) {
  PrefixMatch out;
  const Walk w = descend(tokens, max_tokens, salt);
  if (!w.node) return out;
  // Token-exact: a match that ends inside an edge splits it, so a node ends exactly there.
  Node* node = w.edge ? split(w.edge, w.into) : w.node;
  const int m = node->end();
  if (m == 0) return out;
  ++clock_;
  out.tokens = m;
  out.blocks.assign(std::size_t(ceil_div(m, block_size_)), -1);
  // Leaf to root: the deepest node reaching into a block has the last word on it (its writer
  // had the same tokens before it), so a block already taken by a deeper node stays.
  for (Node* n = node; n->parent; n = n->parent) {
    n->last_access = clock_;
    ++n->hits;
    const int first = n->depth / block_size_;
    for (std::size_t i = 0; i < n->blocks.size(); ++i) {
      const std::size_t at = std::size_t(first) + i;
      if (at < out.blocks.size() && out.blocks[at] == -1) out.blocks[at] = n->blocks[i];
    }
  }
  out.handle = reinterpret_cast<std::uintptr_t>(node);
  return out;
}

std::uint64_t RadixPrefixCache::insert(std::span<const int> tokens, std::span<const int> blocks,
                                       std::uint64_t salt) {
  const int len = static_cast<int>(tokens.size()), B = block_size_;
  if (static_cast<int>(blocks.size()) != ceil_div(len, B)) {
    throw Error(fmt::format("prefix cache: {} tokens live in {} blocks of {}, {} given", len,
                            ceil_div(len, B), B, blocks.size()));
  }
  if (len == 0) return 0;
  if (!root(salt)) {
    roots_.push_back(std::make_unique<Node>());
    roots_salt_.push_back(salt);
  }
  ++clock_;
  const Walk w = descend(tokens, len, salt);
  for (Node* n = w.node; n; n = n->parent) n->last_access = clock_;
  Node* node = w.node;
  if (w.edge) {
    if (w.node->end() + w.into == len) {  // the tokens end inside this edge: all cached already
      w.edge->last_access = clock_;
      return reinterpret_cast<std::uintptr_t>(w.edge);
    }
    node = split(w.edge, w.into);  // they part ways inside the edge
    node->last_access = clock_;
  }
  const int m = node->end();
  if (m < len) {
    // The new part: a leaf holding the blocks of positions m .. len - 1.
    auto leaf = std::make_unique<Node>();
    leaf->tokens.assign(tokens.begin() + m, tokens.end());
    leaf->depth = m;
    leaf->parent = node;
    leaf->last_access = clock_;
    leaf->serial = ++serial_;
    for (int i = m / B; i <= (len - 1) / B; ++i) {
      alloc_.retain(blocks[std::size_t(i)]);
      leaf->blocks.push_back(blocks[std::size_t(i)]);
    }
    if (m % B != 0) adopt_straddling_block(node, m / B, blocks[std::size_t(m / B)]);
    Node* l = leaf.get();
    node->children[tokens[std::size_t(m)]] = std::move(leaf);
    ++nodes_;
    return reinterpret_cast<std::uintptr_t>(l);
  }
  return reinterpret_cast<std::uintptr_t>(node);
}

// A leaf that starts inside block `index` brings its own copy of that block (its writer
// copied the shared one on write): the positions before the cut hold the same keys and values
// in both. The ancestors ending inside that block take the copy and give up the old one, so a
// conversation that keeps growing one turn at a time does not leave one superseded block per
// turn pinned along its path (they could never be evicted while the next turn runs).
void RadixPrefixCache::adopt_straddling_block(Node* node, int index, int block) {
  for (Node* n = node; n->parent; n = n->parent) {
    const int first = n->depth / block_size_;
    if (index < first || index >= first + static_cast<int>(n->blocks.size())) break;
    int& held = n->blocks[std::size_t(index - first)];
    if (held == block) continue;
    alloc_.retain(block);
    alloc_.release(held);
    held = block;
  }
}

void RadixPrefixCache::lock(std::uint64_t handle) {
  if (handle == 0) return;
  for (Node* n = reinterpret_cast<Node*>(handle); n->parent; n = n->parent) ++n->locks;
  ++lock_version_;
}

void RadixPrefixCache::unlock(std::uint64_t handle) {
  if (handle == 0) return;
  for (Node* n = reinterpret_cast<Node*>(handle); n->parent; n = n->parent) {
    if (n->locks < 1) throw Error("prefix cache: unlock of an entry that is not locked");
    --n->locks;
  }
  ++lock_version_;
}

void RadixPrefixCache::remove_leaf(Node* node) {
  for (int b : node->blocks) alloc_.release(b);
  node->parent->children.erase(node->tokens[0]);  // destroys it
  --nodes_;
}

int RadixPrefixCache::evict(int blocks) {
  // LRU over a tree: only an unpinned leaf can go (its descendants would lose their prefix);
  // when the last child of a node goes, the node becomes a leaf and a candidate in turn.
  // Oldest first; at equal age the deeper one (it was written after its parent), then the
  // oldest created, so runs repeat exactly.
  auto later = [](const Node* a, const Node* b) {
    return std::tuple(a->last_access, -a->end(), a->serial) >
           std::tuple(b->last_access, -b->end(), b->serial);
  };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> leaves(later);
  std::vector<Node*> stack;
  for (auto& r : roots_) stack.push_back(r.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->parent && n->children.empty() && n->locks == 0) leaves.push(n);
    for (auto& [first, child] : n->children) stack.push_back(child.get());
  }
  int freed = 0;
  while (freed < blocks && !leaves.empty()) {
    Node* leaf = leaves.top();
    leaves.pop();
    Node* parent = leaf->parent;
    const int before = alloc_.num_free();
    remove_leaf(leaf);
    freed += alloc_.num_free() - before;
    if (parent->parent && parent->children.empty() && parent->locks == 0) leaves.push(parent);
  }
  evicted_blocks_ += freed;
  return freed;
}

int RadixPrefixCache::evictable_blocks() const {
  // Every unpinned node can go eventually (pins cover whole paths to the root, so an unpinned
  // node has no pinned descendant). A block comes free when all its references are the cache's
  // unpinned ones.
  const std::uint64_t version = alloc_.version() * 0x9E3779B97F4A7C15ull + lock_version_;
  if (version == memo_version_) return memo_evictable_;
  std::unordered_map<int, int> refs;
  std::vector<const Node*> stack;
  for (const auto& r : roots_) stack.push_back(r.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->locks == 0)
      for (int b : n->blocks) ++refs[b];
    for (const auto& [first, child] : n->children) stack.push_back(child.get());
  }
  int count = 0;
  for (const auto& [b, r] : refs) count += alloc_.ref_count(b) == r;
  memo_version_ = version;
  memo_evictable_ = count;
  return count;
}

int RadixPrefixCache::cached_blocks() const {
  std::vector<char> seen(std::size_t(alloc_.num_blocks()), 0);
  int count = 0;
  std::vector<const Node*> stack;
  for (const auto& r : roots_) stack.push_back(r.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (int b : n->blocks) count += !std::exchange(seen[std::size_t(b)], 1);
    for (const auto& [first, child] : n->children) stack.push_back(child.get());
  }
  return count;
}

std::vector<TrieNodeView> RadixPrefixCache::view(std::uint64_t salt) const {
  std::vector<TrieNodeView> out;
  const Node* r = root(salt);
  if (!r) return out;
  std::vector<std::pair<const Node*, int>> queue = {{r, -1}};  // breadth first
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const auto [n, parent] = queue[i];
    out.push_back({static_cast<int>(i), parent, n->depth, static_cast<int>(n->tokens.size()),
                   n->hits, n->locks});
    for (const auto& [first, child] : n->children)
      queue.push_back({child.get(), static_cast<int>(i)});
  }
  return out;
}

// --- chained block hashes ----------------------------------------------------------------------

struct HashPrefixCache::Table {
  struct Entry {
    std::uint64_t parent_key = 0;  // the previous block's key (the salt's for the first)
    std::vector<int> tokens;       // this block's block_size tokens
    int block = -1;                // where their keys and values are
    int depth = 0;                 // its index in the prompt
    std::uint64_t last_access = 0;
  };
  std::unordered_map<std::uint64_t, Entry> map;

  static std::uint64_t first_key(std::uint64_t salt) { return mix(salt ^ 0x5EED5EED5EED5EEDull); }
  static std::uint64_t key(std::uint64_t parent, std::span<const int> tokens) {
    std::uint64_t h = mix(parent);
    for (int t : tokens) h = mix(h ^ static_cast<std::uint32_t>(t));
    return h;
  }
  // The entry for this block if its key, parent and tokens all agree (else a miss: a 64-bit
  // collision is never served).
  Entry* find(std::uint64_t k, std::uint64_t parent, std::span<const int> tokens) {
    const auto it = map.find(k);
    if (it == map.end() || it->second.parent_key != parent ||
        !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(),
                    it->second.tokens.end()))
      return nullptr;
    return &it->second;
  }
};

HashPrefixCache::HashPrefixCache(BlockAllocator& allocator, int block_size)
    : PrefixCache(allocator, block_size), table_(std::make_unique<Table>()) {}

HashPrefixCache::~HashPrefixCache() {
  for (const auto& [k, e] : table_->map) alloc_.release(e.block);
}

std::size_t HashPrefixCache::entries() const { return table_->map.size(); }

int HashPrefixCache::peek(std::span<const int> tokens, int max_tokens, std::uint64_t salt) const {
  const int B = block_size_;
  const int full = std::min(max_tokens, static_cast<int>(tokens.size())) / B;
  std::uint64_t parent = Table::first_key(salt);
  int i = 0;
  for (; i < full; ++i) {
    const auto block = tokens.subspan(std::size_t(i) * B, std::size_t(B));
    const std::uint64_t k = Table::key(parent, block);
    if (!table_->find(k, parent, block)) break;
    parent = k;
  }
  return i * B;
}

PrefixMatch HashPrefixCache::match(std::span<const int> tokens, int max_tokens,
                                   std::uint64_t salt) {
  PrefixMatch out;
  const int B = block_size_;
  const int full = std::min(max_tokens, static_cast<int>(tokens.size())) / B;
  std::uint64_t parent = Table::first_key(salt);
  ++clock_;
  for (int i = 0; i < full; ++i) {
    const auto block = tokens.subspan(std::size_t(i) * B, std::size_t(B));
    const std::uint64_t k = Table::key(parent, block);
    Table::Entry* e = table_->find(k, parent, block);
    if (!e) break;
    e->last_access = clock_;
    out.blocks.push_back(e->block);
    parent = k;
  }
  out.tokens = static_cast<int>(out.blocks.size()) * B;
  return out;
}

std::uint64_t HashPrefixCache::insert(std::span<const int> tokens, std::span<const int> blocks,
                                      std::uint64_t salt) {
  const int len = static_cast<int>(tokens.size()), B = block_size_;
  if (static_cast<int>(blocks.size()) != ceil_div(len, B)) {
    throw Error(fmt::format("prefix cache: {} tokens live in {} blocks of {}, {} given", len,
                            ceil_div(len, B), B, blocks.size()));
  }
  std::uint64_t parent = Table::first_key(salt);
  ++clock_;
  for (int i = 0; i < len / B; ++i) {  // full blocks only: a partial one is still being written
    const auto block = tokens.subspan(std::size_t(i) * B, std::size_t(B));
    const std::uint64_t k = Table::key(parent, block);
    const auto it = table_->map.find(k);
    if (it == table_->map.end()) {
      alloc_.retain(blocks[std::size_t(i)]);
      table_->map.emplace(
          k, Table::Entry{parent, {block.begin(), block.end()}, blocks[std::size_t(i)], i, clock_});
    } else if (table_->find(k, parent, block)) {
      it->second.last_access = clock_;  // cached already (maybe in another physical block)
    } else {
      break;  // a 64-bit collision: leave the entry alone and stop the chain here
    }
    parent = k;
  }
  return 0;
}

int HashPrefixCache::evict(int blocks) {
  // Candidates: blocks only the cache holds. Oldest first; at equal age the deepest, so a chain
  // loses its tail before its head (a lost head makes the rest unreachable).
  std::vector<std::tuple<std::uint64_t, int, std::uint64_t>> order;
  for (const auto& [k, e] : table_->map)
    if (alloc_.ref_count(e.block) == 1) order.emplace_back(e.last_access, -e.depth, k);
  std::sort(order.begin(), order.end());
  int freed = 0;
  for (const auto& [age, neg_depth, k] : order) {
    if (freed >= blocks) break;
    const auto it = table_->map.find(k);
    alloc_.release(it->second.block);
    table_->map.erase(it);
    ++freed;
  }
  evicted_blocks_ += freed;
  return freed;
}

int HashPrefixCache::evictable_blocks() const {
  if (alloc_.version() == memo_version_) return memo_evictable_;
  int count = 0;
  for (const auto& [k, e] : table_->map) count += alloc_.ref_count(e.block) == 1;
  memo_version_ = alloc_.version();
  memo_evictable_ = count;
  return count;
}

}  // namespace inferlab
