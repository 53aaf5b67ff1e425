// The engine's KV memory managers: contiguous reservations and PagedAttention's blocks.
#include "inferlab/serving/kv_manager.hpp"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/paged_sequence.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

PoolFactory runner_pools(const ModelRunner& runner, DType type) {
  return [&runner, type](int num_blocks, int block_size) {
    return runner.make_pool(num_blocks, block_size, type);
  };
}

PoolFactory virtual_pools(const ModelConfig& config, DType type) {
  return [config, type](int num_blocks, int block_size) -> std::unique_ptr<KVPool> {
    return std::make_unique<VirtualKVPool>(config, num_blocks, block_size, type);
  };
}

void KVManager::swap_out(Sequence&) {
  throw Error(fmt::format("{} KV memory cannot swap", name()));
}
void KVManager::swap_in(Sequence&) { throw Error(fmt::format("{} KV memory cannot swap", name())); }

namespace {
// The positions a sequence will have forwarded when it finishes: P + max_new_tokens - 1 (the
// last generated token is never forwarded).
int final_positions(const Sequence& seq) { return seq.prompt_tokens + seq.max_new_tokens - 1; }
}  // namespace

// --- contiguous --------------------------------------------------------------------------------

ContiguousKVManager::ContiguousKVManager(PoolFactory pools, const ModelConfig& config, DType type,
                                         std::size_t budget_tokens, Reserve reserve)
    : pools_(std::move(pools)),
      config_(config),
      type_(type),
      budget_(budget_tokens),
      reserve_(reserve) {}

int ContiguousKVManager::reservation(const Sequence& seq) const {
  return reserve_ == Reserve::context ? config_.seq_len : std::max(final_positions(seq), 1);
}

std::size_t ContiguousKVManager::positions_to_finish(int prompt_tokens, int max_new_tokens,
                                                     int branches) const {
  // Every branch holds a whole reservation from the start.
  const int one = reserve_ == Reserve::context ? config_.seq_len
                                               : std::max(prompt_tokens + max_new_tokens - 1, 1);
  return std::size_t(one) * std::size_t(std::max(branches, 1));
}

bool ContiguousKVManager::can_allocate(const Sequence& seq) const {
  // A request with parallel samples needs a reservation for every branch.
  const std::size_t n = 1 + seq.forks.size();
  return budget_ == 0 || reserved_ + n * std::size_t(reservation(seq)) <= budget_;
}

void ContiguousKVManager::allocate(Sequence& seq) {
  if (seq.kv) throw Error(fmt::format("request {} already holds KV memory", seq.request.id));
  if (!can_allocate(seq)) {
    throw Error(fmt::format("contiguous KV: request {} needs {} positions, {} of {} are free",
                            seq.request.id, reservation(seq), budget_ - reserved_, budget_));
  }
  seq.kv = std::make_unique<KVCache>(pools_(1, reservation(seq)));
  // The parallel branches' reservations are taken now too, so their fork cannot fail later.
  reserved_ += (1 + seq.forks.size()) * std::size_t(reservation(seq));
  live_.push_back(&seq);
}

bool ContiguousKVManager::can_append(const Sequence& seq, int n) const {
  return seq.kv && seq.computed + n <= seq.kv->capacity();
}

void ContiguousKVManager::append(Sequence& seq, int n) {
  // The whole reservation was made at admission: nothing to add, only a check.
  if (!can_append(seq, n)) {
    throw Error(fmt::format("contiguous KV: request {} forwards past its reservation of {}",
                            seq.request.id, seq.kv ? seq.kv->capacity() : 0));
  }
}

void ContiguousKVManager::free(Sequence& seq) {
  if (!seq.kv) return;
  // Its own reservation and those of branches it has not forked yet.
  reserved_ -= std::size_t(seq.kv->capacity()) * (1 + seq.forks.size());
  seq.kv.reset();
  std::erase(live_, &seq);
}

void ContiguousKVManager::fork(const Sequence& parent, Sequence& child, int length) {
  if (!parent.kv || child.kv) throw Error("fork: the parent must hold memory, the child none");
  // Without paging a branch cannot share: it gets its own reservation (counted when the parent
  // was admitted) and a copy of the prefix.
  child.kv = std::make_unique<KVCache>(pools_(1, reservation(child)));
  std::vector<std::uint8_t> bytes(parent.kv->pool().bytes_per_block());
  parent.kv->pool().read_block(0, bytes);
  child.kv->pool().write_block(0, bytes);
  child.kv->set_length(length);
  live_.push_back(&child);
}

std::size_t ContiguousKVManager::used_tokens() const {
  std::size_t used = 0;
  for (const Sequence* s : live_) used += std::size_t(s->kv->length());
  return used;
}

// --- paged -------------------------------------------------------------------------------------

PagedKVManager::PagedKVManager(PoolFactory pools, int num_blocks, int block_size,
                               std::size_t swap_bytes, PrefixCacheKind cache)
    : pool_(pools(num_blocks, block_size)),
      alloc_(num_blocks),
      cache_(make_prefix_cache(cache, alloc_, block_size)),
      block_size_(block_size),
      swap_capacity_(swap_bytes) {}

int PagedKVManager::available_blocks() const {
  return alloc_.num_free() + (cache_ ? cache_->evictable_blocks() : 0);
}

// Cached blocks nobody uses are free memory with a bonus: when the free list is short, the
// cache gives some back.
void PagedKVManager::make_free(int blocks) {
  if (cache_ && alloc_.num_free() < blocks) cache_->evict(blocks - alloc_.num_free());
}

namespace {
// What a prefix cache may serve of a waiting sequence: the positions it is about to prefill,
// but the last, whose forward pass gives the logits of its next token.
std::span<const int> cacheable(const Sequence& seq) {
  return std::span<const int>(seq.tokens).first(std::size_t(std::max(seq.prefill_target, 1)));
}
int cache_limit(const Sequence& seq) { return std::max(seq.prefill_target - 1, 0); }
}  // namespace

int PagedKVManager::cached_prefix(const Sequence& seq) const {
  if (!cache_ || seq.tokens.empty()) return 0;
  return cache_->peek(cacheable(seq), cache_limit(seq), tenant_salt(seq.request.tenant));
}

void PagedKVManager::computed(Sequence& seq) {
  if (!cache_ || !seq.kv || seq.prefix_inserted || seq.computed < seq.prompt_tokens) return;
  seq.prefix_inserted = true;
  // The prompt's full blocks: the last, partial one is still being written by this sequence
  // (caching it would make the sequence copy it at its next token).
  const int full = seq.prompt_tokens / block_size_;
  if (full == 0) return;
  const std::uint64_t h =
      cache_->insert(std::span<const int>(seq.tokens).first(std::size_t(full) * block_size_),
                     std::span<const int>(seq.kv->blocks()).first(std::size_t(full)),
                     tenant_salt(seq.request.tenant));
  // Pin what it now stands on instead of what it matched (the new path includes it).
  cache_->lock(h);
  cache_->unlock(seq.prefix_lock);
  seq.prefix_lock = h;
}

std::size_t PagedKVManager::positions_to_finish(int prompt_tokens, int max_new_tokens,
                                                int /*branches*/) const {
  // Its positions and the next token's room (branches share the prompt's blocks).
  return std::size_t(prompt_tokens) + std::size_t(max_new_tokens);
}

std::size_t PagedKVManager::capacity_tokens() const {
  return std::size_t(alloc_.num_blocks()) * block_size_;
}

std::size_t PagedKVManager::reserved_tokens() const {
  return std::size_t(alloc_.num_used()) * block_size_;
}

std::size_t PagedKVManager::used_tokens() const {
  // A shared block counts once: each physical block holds as many valid positions as the
  // longest sequence that uses it has written into it.
  std::vector<int> filled(std::size_t(alloc_.num_blocks()), 0);
  for (const Sequence* s : live_) {
    const auto& blocks = s->kv->blocks();
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const int in_block = std::clamp(s->kv->length() - int(i) * block_size_, 0, block_size_);
      int& f = filled[std::size_t(blocks[i])];
      f = std::max(f, in_block);
    }
  }
  std::size_t used = 0;
  for (int f : filled) used += std::size_t(f);
  return used;
}

bool PagedKVManager::can_allocate(const Sequence& seq) const {
  // The prompt's blocks (prefill runs chunk by chunk, but holding the whole prompt avoids two
  // half-prefilled requests blocking each other) plus room for the first generated token, and
  // one block per parallel branch (its copy of the shared last block, or its next block).
  // A watermark keeps one free block per sequence already holding memory: each of them will
  // soon need its next block, and admitting into that headroom only makes someone a victim of
  // preemption a few steps later.
  // Full blocks found in the prefix cache are not needed; the blocks of the match may be among
  // the evictable ones, which then cannot be evicted for it.
  const int hit = cached_prefix(seq);
  const long need = ceil_div(long(seq.tokens.size()) + 1, block_size_) - hit / block_size_ +
                    long(seq.forks.size()) + long(live_.size());
  return need <= long(available_blocks()) - ceil_div(hit, block_size_);
}

void PagedKVManager::allocate(Sequence& seq) {
  if (seq.kv) throw Error(fmt::format("request {} already holds KV memory", seq.request.id));
  auto kv = std::make_unique<KVSequence>(*pool_);
  PrefixMatch hit;
  if (cache_) {
    hit = cache_->match(cacheable(seq), cache_limit(seq), tenant_salt(seq.request.tenant));
    cache_->lock(hit.handle);
    // The sequence's own references, taken before anything is evicted: from now on these
    // blocks are in use and no eviction can take them.
    for (int id : hit.blocks) {
      alloc_.retain(id);
      kv->append_block(id);
    }
  }
  const int need = ceil_div(long(seq.tokens.size()), block_size_) - int(hit.blocks.size());
  make_free(need);
  if (need > alloc_.num_free()) {
    for (int id : hit.blocks) alloc_.release(id);
    if (cache_) cache_->unlock(hit.handle);
    throw Error(fmt::format("paged KV: request {} needs {} blocks, {} of {} are free",
                            seq.request.id, need, alloc_.num_free(), alloc_.num_blocks()));
  }
  for (int i = 0; i < need; ++i) kv->append_block(alloc_.allocate());
  // The matched positions are computed already: prefill starts after them.
  kv->set_length(hit.tokens);
  seq.computed = hit.tokens;
  seq.prefix_lock = hit.handle;
  if (seq.preemptions == 0) seq.cached_tokens = hit.tokens;  // a readmission is not a new hit
  seq.kv = std::move(kv);
  live_.push_back(&seq);
}

int PagedKVManager::blocks_needed(const Sequence& seq, int n) const {
  if (!seq.kv) return ceil_div(seq.computed + n, block_size_);
  return paged::blocks_to_write(*seq.kv, alloc_, seq.computed, seq.computed + n);
}

bool PagedKVManager::can_append(const Sequence& seq, int n) const {
  return seq.kv && blocks_needed(seq, n) <= available_blocks();
}

void PagedKVManager::append(Sequence& seq, int n) {
  if (!can_append(seq, n)) {
    throw Error(fmt::format("paged KV: request {} needs {} more blocks, {} are free",
                            seq.request.id, blocks_needed(seq, n), alloc_.num_free()));
  }
  make_free(blocks_needed(seq, n));
  // Copy-on-write: the blocks this step writes into must be this sequence's own.
  paged::prepare_write(*seq.kv, alloc_, seq.computed, seq.computed + n);
}

void PagedKVManager::free(Sequence& seq) {
  if (!seq.kv) return;
  if (cache_) {
    // Everything it computed, generated tokens included, stays reusable: the next turn of a
    // chat resends exactly these tokens.
    const int len = seq.kv->length();
    cache_->insert(
        std::span<const int>(seq.tokens).first(std::size_t(len)),
        std::span<const int>(seq.kv->blocks()).first(std::size_t(ceil_div(len, block_size_))),
        tenant_salt(seq.request.tenant));
  }
  release(seq);
}

void PagedKVManager::release(Sequence& seq) {
  if (cache_) cache_->unlock(seq.prefix_lock);
  seq.prefix_lock = 0;
  paged::release(*seq.kv, alloc_);
  seq.kv.reset();
  std::erase(live_, &seq);
}

void PagedKVManager::fork(const Sequence& parent, Sequence& child, int length) {
  if (!parent.kv) throw Error("fork: the parent holds no KV memory");
  if (child.kv) throw Error("fork: the child already holds KV memory");
  if (length < 0 || length > parent.kv->length())
    throw Error(
        fmt::format("fork: {} positions asked, the parent has {}", length, parent.kv->length()));
  child.kv = std::make_unique<KVSequence>(*pool_);
  paged::fork(*parent.kv, *child.kv, alloc_, length);
  live_.push_back(&child);
}

std::size_t PagedKVManager::logical_tokens() const {
  std::size_t n = 0;
  for (const Sequence* s : live_) n += std::size_t(s->kv->length());
  return n;
}

bool PagedKVManager::can_swap_out(const Sequence& seq) const {
  return seq.kv &&
         swap_used_ + seq.kv->blocks().size() * pool_->bytes_per_block() <= swap_capacity_;
}

void PagedKVManager::swap_out(Sequence& seq) {
  if (!can_swap_out(seq))
    throw Error(fmt::format("paged KV: request {} does not fit the swap area", seq.request.id));
  Swapped saved;
  saved.length = seq.kv->length();
  for (int id : seq.kv->blocks()) {
    saved.blocks.emplace_back(pool_->bytes_per_block());
    pool_->read_block(id, saved.blocks.back());
  }
  const std::size_t bytes = saved.blocks.size() * pool_->bytes_per_block();
  swap_used_ += bytes;
  swapped_bytes_ += bytes;
  swap_[&seq] = std::move(saved);
  release(seq);  // not into the prefix cache: that would keep the blocks the swap frees
}

bool PagedKVManager::can_swap_in(const Sequence& seq) const {
  const auto it = swap_.find(&seq);
  // Its blocks, plus one for the token it forwards next.
  return it != swap_.end() && int(it->second.blocks.size()) + 1 <= available_blocks();
}

void PagedKVManager::swap_in(Sequence& seq) {
  const auto it = swap_.find(&seq);
  if (it == swap_.end() || !can_swap_in(seq))
    throw Error(fmt::format("paged KV: request {} cannot be swapped in now", seq.request.id));
  make_free(int(it->second.blocks.size()));
  seq.kv = std::make_unique<KVSequence>(*pool_);
  for (const auto& bytes : it->second.blocks) {
    const int id = alloc_.allocate();
    pool_->write_block(id, bytes);
    seq.kv->append_block(id);
  }
  seq.kv->set_length(it->second.length);
  const std::size_t bytes = it->second.blocks.size() * pool_->bytes_per_block();
  swap_used_ -= bytes;
  swapped_bytes_ += bytes;
  swap_.erase(it);
  live_.push_back(&seq);
}

}  // namespace inferlab
