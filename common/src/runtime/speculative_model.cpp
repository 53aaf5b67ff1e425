// The models of speculative decoding: one sequence's cache, forward calls, rollback.
#include "inferlab/runtime/speculative_model.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/runtime/kv_cache.hpp"

namespace inferlab {

namespace {

SpecModelOptions with_capacity(int capacity) {
  SpecModelOptions o;
  o.capacity = capacity;
  return o;
}

}  // namespace

SpecModel::SpecModel(const Model& model, int capacity)
    : SpecModel(nullptr, model, with_capacity(capacity)) {}

SpecModel::SpecModel(const Model& model, const SpecModelOptions& options)
    : SpecModel(nullptr, model, options) {}

SpecModel::SpecModel(std::unique_ptr<Model> view, const Model& model,
                     const SpecModelOptions& options)
    : view_(std::move(view)),
      model_(view_ ? view_.get() : &model),
      block_size_(options.block_size) {
  const int seq_len = model_->config().seq_len;
  capacity_ = options.capacity == 0 ? seq_len : options.capacity;
  if (capacity_ < 1 || capacity_ > seq_len) {
    throw Error(fmt::format("KV cache capacity {} outside [1, seq_len = {}]", capacity_, seq_len));
  }
  if (block_size_ < 0) {
    throw ParameterError("block_size",
                         fmt::format("{}: must be >= 1 (paged) or 0 (contiguous)", block_size_));
  }
  runner_ = make_runner(*model_, options.device);
  if (block_size_ == 0) {
    cache_ = std::make_unique<KVCache>(make_cache(*runner_, capacity_));
    rollback_ = std::make_unique<ContiguousKVRollback>(static_cast<KVCache&>(*cache_));
  } else {
    // Exactly the blocks the capacity needs: the sequence can always grow to capacity_.
    const int blocks = ceil_div(capacity_, block_size_);
    pool_ = runner_->make_pool(blocks, block_size_, DType::f32);
    allocator_ = std::make_unique<BlockAllocator>(blocks);
    cache_ = std::make_unique<KVSequence>(*pool_);
    auto paged = std::make_unique<PagedKVRollback>(*cache_, *allocator_);
    paged_ = paged.get();
    rollback_ = std::move(paged);
  }
}

std::unique_ptr<SpecModel> SpecModel::early_exit(const Model& target, int layers, int capacity) {
  return early_exit(target, layers, with_capacity(capacity));
}

std::unique_ptr<SpecModel> SpecModel::early_exit(const Model& target, int layers,
                                                 const SpecModelOptions& options) {
  auto view = std::make_unique<Model>(Model::first_layers_view(target, layers));
  return std::unique_ptr<SpecModel>(new SpecModel(std::move(view), target, options));
}

void SpecModel::forward(std::span<const int> tokens, LogitsMode mode, std::vector<float>& logits,
                        const TreeMask* tree) {
  const int start = cache_->length();
  const int end = start + static_cast<int>(tokens.size());
  if (end > capacity_) {
    throw Error(fmt::format("forward: positions {}..{} beyond the cache's {} positions", start,
                            end - 1, capacity_));
  }
  if (tree && runner_->device() != Device::cpu) {
    throw Error(
        fmt::format("tree attention (each draft node sees only its ancestors) runs on "
                    "the CPU only: the {} runner attends causally",
                    device_name(runner_->device())));
  }
  const double t0 = now_seconds();
  if (paged_) paged_->reserve(end);
  const BatchEntry entry{tokens, start, cache_.get(), tree};
  runner_->step(std::span<const BatchEntry>(&entry, 1), mode, logits);
  seconds_ += now_seconds() - t0;
  ++calls_;
  tokens_forwarded_ += static_cast<long>(tokens.size());
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (tree && tree_from_ < 0 && start + static_cast<int>(tokens.size()) > tree->base) {
    tree_from_ = std::max(tree->base, start);
  }
}

void SpecModel::prefill(std::span<const int> prompt) {
  truncate(0);
  if (prompt.size() > 1) {
    std::vector<float> logits;
    forward(prompt.first(prompt.size() - 1), LogitsMode::last, logits);
  }
}

int SpecModel::resume_point(std::span<const int> context) {
  int held = rollback_to_prefix_of(context);
  // The context's last token is forwarded again if the cache has it: its logits were not kept.
  if (held == static_cast<int>(context.size())) truncate(--held);
  return held;
}

void SpecModel::forward_context(std::span<const int> context, std::vector<float>& logits) {
  const int held = resume_point(context);
  forward(context.subspan(std::size_t(held)), LogitsMode::last, logits);
}

int SpecModel::rollback_to_prefix_of(std::span<const int> context) {
  const std::size_t plain = tree_from_ < 0 ? tokens_.size() : std::size_t(tree_from_);
  const std::size_t limit = std::min(plain, context.size());
  std::size_t common = 0;
  while (common < limit && tokens_[common] == context[common]) ++common;
  truncate(static_cast<int>(common));
  return static_cast<int>(common);
}

void SpecModel::truncate(int length) {
  rollback_->truncate(length);
  tokens_.resize(std::size_t(length));
  if (tree_from_ >= length) tree_from_ = -1;
}

void SpecModel::keep_rows(int base, std::span<const int> rows) {
  rollback_->keep_rows(base, rows);
  for (std::size_t i = 0; i < rows.size(); ++i) tokens_[base + i] = tokens_[std::size_t(rows[i])];
  tokens_.resize(base + rows.size());
  if (tree_from_ >= base) tree_from_ = -1;  // the kept path is a plain sequence
}

void SpecModel::reset_counters() {
  calls_ = 0;
  tokens_forwarded_ = 0;
  seconds_ = 0.0;
}

}  // namespace inferlab
