#pragma once
/// @file request.hpp
/// @brief What a client asks for (Request) and what the engine keeps while serving it
/// (Sequence): its tokens, how many of them are already in its KV cache, its slot, its clock.
///
/// One idea drives the whole serving loop: a sequence's tokens are BOS + prompt + generated, and
/// `computed` counts the positions already forwarded into its KV cache. Every step forwards
/// tokens[computed, computed + n) for some n the scheduler chooses: a prompt chunk while
/// computed < P, one token afterwards. When a step reaches the end of the known tokens
/// (computed + n == tokens.size()), the step's logits are sampled and one token is appended.
/// Prefill, chunked prefill and decode are the same operation with different n.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferlab/runtime/kv_sequence.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief One request of a workload, as a client sends it.
struct Request {
  int id = 0;            ///< position in the workload (0, 1, ...), used to name it everywhere
  double arrival = 0.0;  ///< seconds after the start of the run when it arrives
  std::string prompt;    ///< prompt text (BOS, if any, is prepended), used when prompt_len is 0
  /// Prompt length in tokens, BOS (if the model has one: prompt_bos()) included, for synthetic
  /// prompts (0 = use @ref prompt). The ids are made up (see synthetic_prompt()); only the
  /// length matters for timing.
  int prompt_len = 0;
  int max_tokens = 64;      ///< new tokens to generate at most (>= 1)
  SamplingParams sampling;  ///< this request's sampler settings (its own seed, its own RNG)
  /// Keep generating when the model emits an end-of-generation token (Sequence::end_tokens), so
  /// the output length is exactly max_tokens, as serving benchmarks do to control output lengths.
  bool ignore_eos = false;
  /// The length at which this request really stops (its end of text), unknown to the engine
  /// until it happens; 0 = none (the model's own end of text, or max_tokens). Synthetic
  /// workloads use it to model clients that ask for a large max_tokens and stop earlier.
  int output_len = 0;
  /// Parallel samples: after the prompt, n sequences continue from it (branch b samples with
  /// seed sampling.seed + 7919 * b), sharing the prompt's KV blocks (chapter 05).
  int n = 1;
  /// The prompt as token ids, BOS excluded (prompt_bos() is prepended); used when not empty,
  /// before prompt_len and prompt. Shared-prefix workloads build prompts this way (chapter 06).
  std::vector<int> prompt_ids;
  /// Who sends it. The prefix cache salts its entries with the tenant, so a request never
  /// reuses (and its timing never reveals) another tenant's cached prefix; "" = no salt.
  std::string tenant;
  /// The Request::id of the earlier turn this request continues (-1: none). Its prompt is that
  /// request's tokens (BOS + prompt + generated, without a final end of text) followed by its
  /// own prompt (prompt_ids, or text), and it arrives think_time seconds after that request
  /// finishes (or at `arrival`, if later): a chat whose every turn resends the conversation.
  int parent = -1;
  double think_time = 0.0;  ///< seconds between the parent's last token and this arrival
};

/// @brief @p length made-up token ids (no BOS; @p length may be 0), the text of
/// Request::prompt_len: ids in [3, vocab_size), a fixed function of (request id, position) so
/// runs repeat.
std::vector<int> synthetic_prompt(int request_id, int length, int vocab_size);

/// @brief The id make_sequence() puts before every prompt: the tokenizer's BOS when its
/// encode() prepends one (a llama2.c vocabulary, Llama's), -1 when it adds none (SmolLM2,
/// Qwen2: their id 1 is `<|im_start|>`, not a BOS), llama2.c's kBosToken without a tokenizer.
int prompt_bos(const Tokenizer* tokenizer);

/// @brief Where a sequence is in its life.
enum class SequenceStatus {
  waiting,   ///< arrived, not admitted yet (no slot, no cache), or preempted to recompute
  running,   ///< admitted: holds a slot and KV memory
  swapped,   ///< preempted: its KV blocks wait in the host swap area (chapter 05)
  finished,  ///< max_tokens generated or end of text: slot and memory released
};

/// @brief Why a sequence stopped generating.
enum class StopReason {
  none,        ///< still running
  eos,         ///< the model emitted an end-of-generation token (Sequence::end_tokens)
  max_tokens,  ///< the request's max_tokens were generated
  context,     ///< the model's context is full (max_tokens was more than fits)
};
/// @brief "none", "eos", "max_tokens" or "context".
const char* stop_reason_name(StopReason reason);

/// @brief The engine's state for one request.
struct Sequence {
  Request request;          ///< what was asked
  std::vector<int> tokens;  ///< BOS (if the model has one) + prompt + generated so far
  int prompt_tokens = 0;    ///< P: BOS (if any) + prompt
  bool has_bos = false;     ///< tokens[0] is the BOS make_sequence() put first (prompt_bos())
  int max_new_tokens = 0;   ///< request.max_tokens clamped so every position fits the context
  int computed = 0;         ///< positions already forwarded into the KV cache (0..tokens.size())
  /// Positions to forward as prefill chunks before decoding: P, or after a recompute
  /// preemption every token known then (prompt + generated so far).
  int prefill_target = 0;
  SequenceStatus status = SequenceStatus::waiting;  ///< where it is in its life
  int slot = -1;                   ///< batch slot while running (a track in the trace), else -1
  double admitted_at = -1.0;       ///< when the scheduler first gave it work, seconds (-1: never)
  RequestTimeline timeline;        ///< arrival and one time per generated token
  std::unique_ptr<KVSequence> kv;  ///< its KV memory while admitted (from the KVManager)
  StopReason stop_reason = StopReason::none;  ///< set when it finishes
  int preemptions = 0;                        ///< times it was preempted (chapter 05)
  int branch = 0;  ///< 0 for the request's first sequence, b for its b-th parallel sample
  /// Parallel samples still to be forked from this sequence when its prompt is in the cache.
  std::vector<Sequence*> forks;
  std::optional<Sampler> sampler;  ///< the real engine's sampler (own RNG per request)
  /// Prompt positions whose keys and values came from the prefix cache at its first admission
  /// (chapter 06): their prefill was skipped. 0 without a cache.
  int cached_tokens = 0;
  bool prefix_inserted = false;  ///< its prompt's blocks are in the prefix cache already
  /// The prefix-cache entry this sequence pinned at admission (0: none); the cache's handle.
  std::uint64_t prefix_lock = 0;
  /// Ids whose sampling ends the generation, ascending: the tokenizer's end-of-generation set
  /// (Tokenizer::end_of_generation_ids(): BOS for llama2.c models; EOS and the chat template's
  /// end of turn, such as `<|im_end|>`, for GGUF ones). Empty: nothing ends it early.
  std::vector<int> end_tokens;

  /// @brief Tokens generated so far.
  int generated() const { return static_cast<int>(tokens.size()) - prompt_tokens; }
  /// @brief True while part of the prompt is not yet in the cache.
  bool prefilling() const { return computed < prefill_target; }
  /// @brief Tokens known but not yet forwarded: the rest of the prompt, or the 1 newest token.
  int uncomputed() const { return static_cast<int>(tokens.size()) - computed; }
  /// @brief True once it has stopped generating and released its slot.
  bool finished() const { return status == SequenceStatus::finished; }
  /// @brief True when its last token is one of end_tokens (its end of text).
  bool ends_with_end_token() const {
    return !tokens.empty() &&
           std::binary_search(end_tokens.begin(), end_tokens.end(), tokens.back());
  }
};

/// @brief Builds the sequence of @p request: encodes its prompt (or makes a synthetic one),
/// clamps max_tokens so the positions forwarded, P + max_new_tokens - 1, fit in @p context.
/// @param request the prompt (text or length), max_tokens and sampling parameters
/// @param tokenizer used for text prompts, for the BOS (prompt_bos()) and for the end tokens;
/// may be null when every prompt is given by length or ids (BOS and end tokens are then
/// llama2.c's)
/// @param vocab_size V, the id range of a synthetic prompt
/// @param context S, positions the sequence's KV cache may hold
/// @return a waiting sequence: tokens = BOS (if any) + prompt, end_tokens the tokenizer's
/// end-of-generation ids, nothing computed, no slot
/// @throws inferlab::Error if the prompt is text but no tokenizer is given, the prompt does not
/// fit in @p context, max_tokens < 1, or the sampling parameters are invalid.
Sequence make_sequence(const Request& request, const Tokenizer* tokenizer, int vocab_size,
                       int context);

/// @brief Makes @p turn, a later turn of a chat (Request::parent), continue @p previous, which
/// has finished: its tokens become previous's tokens (without a final end token) followed by
/// its own prompt without BOS, and max_new_tokens is clamped again to @p context.
/// @throws inferlab::Error if the conversation no longer fits in @p context.
void continue_conversation(Sequence& turn, const Sequence& previous, int context);

/// @brief Branch @p branch (>= 1) of @p parent's request: the same prompt and limits, its own
/// seed (sampling.seed + 7919 * branch). It starts when the scheduler forks it from the parent.
Sequence make_branch(const Sequence& parent, int branch);

}  // namespace inferlab
