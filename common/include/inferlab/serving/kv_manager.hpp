#pragma once
/// @file kv_manager.hpp
/// @brief Who owns KV memory in the serving engine, and the two ways to manage it.
///
/// The scheduler asks before it acts (nano-vllm's pairs): can_allocate / allocate when it
/// admits a sequence, can_append / append before a step forwards n more of its tokens, free
/// when it finishes. Two managers answer:
///  - ContiguousKVManager: each sequence reserves, at admission, one contiguous region for
///    every position it might ever need (prompt + max_tokens, or the whole context), as serving
///    engines did before paging. Most of a reservation sits unused until the end: the waste
///    chapter 05 measures.
///  - PagedKVManager (PagedAttention): one pool of fixed-size blocks shared by all sequences;
///    a sequence takes a block only when its last block is full, so the only waste is the
///    unfilled part of each sequence's last block. Blocks are reference counted, so sequences
///    can share them (fork) and copy one only when writing into it (copy-on-write). When the
///    pool runs dry, a sequence can be swapped out to a bounded host area.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "inferlab/runtime/block_allocator.hpp"
#include "inferlab/runtime/kv_pool.hpp"
#include "inferlab/serving/prefix_cache.hpp"
#include "inferlab/serving/request.hpp"

namespace inferlab {

class ModelRunner;

/// @brief Makes the pools a manager stores into: (num_blocks, block_size) -> pool.
using PoolFactory = std::function<std::unique_ptr<KVPool>(int num_blocks, int block_size)>;
/// @brief Pools on @p runner's device, in @p type (the real engine).
PoolFactory runner_pools(const ModelRunner& runner, DType type);
/// @brief Pools with sizes and no storage (the simulated clock).
PoolFactory virtual_pools(const ModelConfig& config, DType type);

/// @brief The interface the scheduler talks to.
class KVManager {
 public:
  virtual ~KVManager() = default;
  /// @brief "contiguous" or "paged".
  virtual const char* name() const = 0;
  /// @brief True if @p seq (waiting) can be given its initial memory now.
  virtual bool can_allocate(const Sequence& seq) const = 0;
  /// @brief Gives @p seq its initial memory (seq.kv is set). @throws inferlab::Error if not.
  virtual void allocate(Sequence& seq) = 0;
  /// @brief True if @p seq can forward @p n more tokens (positions computed..computed+n-1).
  virtual bool can_append(const Sequence& seq, int n) const = 0;
  /// @brief Makes room for @p n more tokens of @p seq (new blocks, copy-on-write).
  virtual void append(Sequence& seq, int n) = 0;
  /// @brief Returns all of @p seq's memory (seq.kv is reset).
  virtual void free(Sequence& seq) = 0;
  /// @brief Gives @p child (holding no memory) the first @p length positions of @p parent's
  /// keys and values: shared blocks (paged) or a copy in its own reservation (contiguous).
  virtual void fork(const Sequence& parent, Sequence& child, int length) = 0;

  /// @brief True if @p seq's blocks fit in the swap area (paged only).
  virtual bool can_swap_out(const Sequence& seq) const {
    (void)seq;
    return false;
  }
  /// @brief Copies @p seq's blocks to host swap memory and frees them.
  virtual void swap_out(Sequence& seq);
  /// @brief True if the blocks of swapped-out @p seq can come back now.
  virtual bool can_swap_in(const Sequence& seq) const {
    (void)seq;
    return false;
  }
  /// @brief Brings @p seq's blocks back from the swap area.
  virtual void swap_in(Sequence& seq);

  /// @brief Positions a sequence of @p prompt_tokens prompt positions that generates
  /// @p max_new_tokens, with @p branches parallel samples in all, takes at its largest under
  /// this memory's rule (a contiguous reservation, or paged blocks): the engine compares it with
  /// capacity_tokens() before the run.
  virtual std::size_t positions_to_finish(int prompt_tokens, int max_new_tokens,
                                          int branches) const = 0;
  /// @brief Positions the memory can hold in all (the budget, in tokens).
  virtual std::size_t capacity_tokens() const = 0;
  /// @brief Positions reserved for sequences right now (allocated, used or not).
  virtual std::size_t reserved_tokens() const = 0;
  /// @brief Positions holding a valid key/value right now (each stored position once).
  virtual std::size_t used_tokens() const = 0;
  /// @brief Positions the sequences see, a shared one counted once per sequence (>= used).
  virtual std::size_t logical_tokens() const = 0;
  /// @brief Bytes one position takes.
  virtual std::size_t bytes_per_token() const = 0;
  /// @brief Bytes copied to and from the swap area so far.
  virtual std::size_t swapped_bytes() const { return 0; }
  /// @brief Positions per block of paged memory; 0 when the memory is not paged.
  virtual int block_size() const { return 0; }

  /// @brief Called after a step: @p seq's positions up to seq.computed now hold their keys
  /// and values (the prefix cache stores a prompt as soon as its prefill is done).
  virtual void computed(Sequence& seq) { (void)seq; }
  /// @brief Prompt positions of waiting @p seq that the prefix cache holds now (0 without one):
  /// what the longest-prefix scheduling order sorts by.
  virtual int cached_prefix(const Sequence& seq) const {
    (void)seq;
    return 0;
  }
  /// @brief The prefix cache (chapter 06), or nullptr.
  virtual const PrefixCache* prefix_cache() const { return nullptr; }
};

/// @brief How much a contiguous reservation takes.
enum class Reserve {
  max_tokens,  ///< prompt + max_tokens - 1 positions (what the request may use)
  context,     ///< the model's whole context, whatever the request (the oldest engines)
};

/// @brief One contiguous region per sequence, reserved in full at admission.
class ContiguousKVManager final : public KVManager {
 public:
  /// @param pools makes each sequence's one-block pool
  /// @param config the model (its context for Reserve::context, its bytes per token)
  /// @param type the storage type
  /// @param budget_tokens positions all reservations may take together (0 = unlimited)
  /// @param reserve how large a reservation is
  ContiguousKVManager(PoolFactory pools, const ModelConfig& config, DType type,
                      std::size_t budget_tokens = 0, Reserve reserve = Reserve::max_tokens);
  const char* name() const override { return "contiguous"; }
  bool can_allocate(const Sequence& seq) const override;
  void allocate(Sequence& seq) override;
  bool can_append(const Sequence& seq, int n) const override;
  void append(Sequence& seq, int n) override;
  void free(Sequence& seq) override;
  void fork(const Sequence& parent, Sequence& child, int length) override;
  std::size_t positions_to_finish(int prompt_tokens, int max_new_tokens,
                                  int branches) const override;
  std::size_t capacity_tokens() const override { return budget_; }
  std::size_t reserved_tokens() const override { return reserved_; }
  std::size_t used_tokens() const override;
  std::size_t logical_tokens() const override { return used_tokens(); }
  std::size_t bytes_per_token() const override {
    return kv_storage_bytes_per_token(config_, type_);
  }
  /// @brief Positions a reservation for @p seq takes.
  int reservation(const Sequence& seq) const;

 private:
  PoolFactory pools_;
  ModelConfig config_;
  DType type_;
  std::size_t budget_;
  Reserve reserve_;
  std::size_t reserved_ = 0;
  std::vector<const Sequence*> live_;
};

/// @brief PagedAttention's block manager: one pool, block tables, reference counts,
/// copy-on-write, fork, swapping to a bounded host area and, optionally, a prefix cache.
///
/// With a prefix cache (chapter 06), allocate() starts a sequence from the longest cached
/// prefix of its prompt: it shares those blocks (the cache pins them while it runs) and
/// prefills only the rest (seq.computed starts there). A prompt goes into the cache when its
/// prefill is done (full blocks only: the last one is still being written), and the whole
/// sequence, generated tokens included, when it finishes or is preempted to recompute: the
/// next chat turn, or its own readmission, starts from it. Blocks the cache alone holds count as
/// free: when the free list runs short, the cache evicts (least recently used first) before
/// anything is refused, so the scheduler preempts only when the cache has nothing left to give.
class PagedKVManager final : public KVManager {
 public:
  /// @param pools makes the one shared pool
  /// @param num_blocks blocks in the pool (>= 1)
  /// @param block_size positions per block (>= 1)
  /// @param swap_bytes size of the host swap area (0: no swapping)
  /// @param cache the prefix cache to keep in the pool (off: none)
  PagedKVManager(PoolFactory pools, int num_blocks, int block_size, std::size_t swap_bytes = 0,
                 PrefixCacheKind cache = PrefixCacheKind::off);
  const char* name() const override { return "paged"; }
  bool can_allocate(const Sequence& seq) const override;
  void allocate(Sequence& seq) override;
  bool can_append(const Sequence& seq, int n) const override;
  void append(Sequence& seq, int n) override;
  void free(Sequence& seq) override;
  bool can_swap_out(const Sequence& seq) const override;
  void swap_out(Sequence& seq) override;
  bool can_swap_in(const Sequence& seq) const override;
  void swap_in(Sequence& seq) override;
  std::size_t positions_to_finish(int prompt_tokens, int max_new_tokens,
                                  int branches) const override;
  std::size_t capacity_tokens() const override;
  std::size_t reserved_tokens() const override;
  std::size_t used_tokens() const override;
  std::size_t logical_tokens() const override;
  std::size_t bytes_per_token() const override { return pool_->bytes_per_token(); }
  std::size_t swapped_bytes() const override { return swapped_bytes_; }
  void computed(Sequence& seq) override;
  int cached_prefix(const Sequence& seq) const override;
  const PrefixCache* prefix_cache() const override { return cache_.get(); }
  /// @brief Free blocks, plus those the prefix cache could give back (evictable_blocks()).
  int available_blocks() const;

  /// @brief @p child shares the blocks of @p parent's first @p length positions (reference
  /// counts + 1): parallel sampling stores the prompt once. @p child must hold no memory.
  void fork(const Sequence& parent, Sequence& child, int length) override;
  /// @brief fork() of all of @p parent's positions.
  void fork(const Sequence& parent, Sequence& child) { fork(parent, child, parent.kv->length()); }
  /// @brief Blocks that @p n more tokens of @p seq need: new blocks plus copies of shared
  /// blocks it would write into.
  int blocks_needed(const Sequence& seq, int n) const;

  KVPool& pool() { return *pool_; }                           ///< the shared blocks
  const BlockAllocator& allocator() const { return alloc_; }  ///< free list and counts
  int block_size() const override { return block_size_; }     ///< positions per block

 private:
  void release(Sequence& seq);
  void make_free(int blocks);
  std::unique_ptr<KVPool> pool_;
  BlockAllocator alloc_;
  std::unique_ptr<PrefixCache> cache_;  // after alloc_: it gives its references back first
  int block_size_;
  std::size_t swap_capacity_, swap_used_ = 0, swapped_bytes_ = 0;
  struct Swapped {
    std::vector<std::vector<std::uint8_t>> blocks;  // one saved block per logical block
    int length = 0;
  };
  std::map<const Sequence*, Swapped> swap_;
  std::vector<const Sequence*> live_;
};

}  // namespace inferlab
