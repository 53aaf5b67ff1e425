#pragma once
/// @file generate.hpp
/// @brief The autoregressive generation loop, shared by the chapters.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferlab/base/device.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief How the loop obtains each step's logits.
enum class LoopKind {
  naive,   ///< chapter 01: re-process the whole sequence from scratch at every step
  cached,  ///< chapter 02: prefill the prompt once, then forward one token per step (KV cache)
};

/// @brief What to generate.
struct GenerateOptions {
  std::string prompt;  ///< UTF-8 text; BOS is prepended (as `encoding` says)
  EncodeOptions encoding;  ///< how the prompt is tokenized (BOS, special-token text)
  bool echo_prompt = true;  ///< pass the prompt's text to on_text before the generated text
  /// Ids that end the generation besides the tokenizer's end-of-generation ones (a chat
  /// template's end-of-turn marker).
  std::vector<int> stop_tokens;
  /// Positions to forward, prompt included, like llama2.c's `-n`: the sequence stops after
  /// `steps` forwarded positions or when BOS is sampled. 0 = the model's seq_len; values above
  /// seq_len are clamped to it.
  int steps = 256;
  SamplingParams sampling;          ///< validated before any work
  LoopKind loop = LoopKind::naive;  ///< how each step's logits are obtained
  DType kv_type = DType::f32;       ///< storage type of the KV cache (f32 only on CUDA)
  Device device = Device::cpu;      ///< where the forward pass runs
  bool keep_logits = false;  ///< keep one logits row per forwarded position (for --dump-logits)
};

/// @brief Why a generation stopped.
enum class GenerationStop {
  eos,        ///< the model sampled an end-of-generation token (BOS in llama2.c models)
  max_steps,  ///< `steps` positions were forwarded (--steps)
  context,    ///< the model's context (seq_len) is full
};

/// @brief "eos", "max_steps" or "context": the `stop_reason` of the chapters' text and JSON.
/// @param reason why a generation stopped
/// @return its name, as the chapters print it
const char* generation_stop_name(GenerationStop reason);

/// @brief The loop's stopping rule, for any loop that appends one or more tokens at a time
/// (speculative decoding appends several): the sequence ends at the first generated
/// end-of-generation token (kept; tokens appended after it are dropped), or once `steps`
/// positions have been forwarded, i.e. at steps + 1 tokens (the last token is never forwarded).
/// @param tokens BOS, prompt, generated; cut after a generated end-of-generation token
/// @param appended how many tokens the last step appended (the ones checked)
/// @param steps positions to forward, prompt included (at most @p seq_len)
/// @param seq_len the model's context: a stop at it is GenerationStop::context
/// @param is_end whether a token ends the generation (the tokenizer's end-of-generation tokens
///        and any stop tokens); empty: BOS, the end-of-text signal of llama2.c models
/// @return why the sequence is done, or std::nullopt while it goes on
std::optional<GenerationStop> generation_stop(std::vector<int>& tokens, std::size_t appended,
                                              int steps, int seq_len,
                                              const std::function<bool(int)>& is_end = nullptr);

/// @brief One forward call of the loop.
struct StepRecord {
  int position = 0;          ///< position of the token whose logits this step produced
  int tokens_forwarded = 0;  ///< tokens the call processed: the whole sequence naively, 1 cached
  double seconds = 0.0;      ///< wall time of the forward call (sampling excluded)
  bool prefill = false;      ///< true for the step that processed the prompt
};

/// @brief Everything a generation produced and measured.
struct GenerationResult {
  std::vector<int> prompt_tokens;      ///< BOS (when added) + encoded prompt
  std::vector<int> tokens;             ///< prompt, generated (the last one is not forwarded)
  std::string text;                    ///< exactly what streaming printed
  std::vector<StepRecord> steps;       ///< one record per forward call, in order
  RequestTimeline timeline;            ///< arrival = start of the call; one time per new token
  RequestMetrics metrics;              ///< TTFT, TPOT, ITL, E2E computed from the timeline
  std::size_t kv_bytes_per_token = 0;  ///< bytes one position occupies in the KV cache
  std::size_t kv_bytes_in_use = 0;     ///< bytes the cache held at the end (cached loop)
  GenerationStop stop_reason = GenerationStop::max_steps;  ///< why the loop ended
  /// (positions, V): logits after forwarding tokens[pos] at pos (when keep_logits).
  std::vector<std::vector<float>> logits;
};

/// @brief Generates from @p model. @p on_text receives each printable piece as soon as it is
/// complete (never half a UTF-8 character).
/// @throws inferlab::Error for invalid sampling parameters or a prompt that does not fit in
/// `steps` positions or the model's context.
GenerationResult generate(const Model& model, const Tokenizer& tokenizer,
                          const GenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text = {});

}  // namespace inferlab
