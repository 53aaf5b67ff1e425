// Requests and the sequences the engine serves them with.
#include "inferlab/serving/request.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

std::vector<int> synthetic_prompt(int request_id, int length, int vocab_size) {
  if (length < 0) throw Error(fmt::format("prompt_len {} (must be >= 0)", length));
  if (vocab_size <= 3) throw Error(fmt::format("vocabulary of {} is too small", vocab_size));
  std::vector<int> ids(static_cast<std::size_t>(length));
  // A hash of (request, position) so prompts differ between requests but repeat between runs;
  // ids 0..2 are llama2.c's special tokens, which a real prompt would not contain.
  std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(request_id + 1);
  for (int i = 0; i < length; ++i) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    x += 0x94D049BB133111EBull;
    ids[i] = 3 + static_cast<int>(x % static_cast<std::uint64_t>(vocab_size - 3));
  }
  return ids;
}

int prompt_bos(const Tokenizer* tokenizer) {
  if (!tokenizer) return kBosToken;
  return tokenizer->adds_bos() ? tokenizer->bos_id() : -1;
}

Sequence make_sequence(const Request& request, const Tokenizer* tokenizer, int vocab_size,
                       int context) {
  request.sampling.validate();
  if (request.n < 1 || request.n > 256) {
    throw Error(fmt::format("request {}: n = {} parallel samples (must be in [1, 256])", request.id,
                            request.n));
  }
  if (request.max_tokens < 1) {
    throw Error(
        fmt::format("request {}: max_tokens {} (must be >= 1)", request.id, request.max_tokens));
  }
  // Before building a synthetic prompt of that length: prompt_len may be anything up to INT_MAX.
  if (request.prompt_len > context) {
    throw Error(fmt::format("request {}: prompt_len {} exceeds the context of {} tokens",
                            request.id, request.prompt_len, context));
  }
  Sequence s;
  s.request = request;
  const int bos = prompt_bos(tokenizer);
  s.has_bos = bos >= 0;
  const std::size_t bos_tokens = s.has_bos ? 1 : 0;
  if (request.prompt_ids.size() + bos_tokens > static_cast<std::size_t>(context)) {
    throw Error(fmt::format("request {}: the prompt is {} tokens{} but the context is {}",
                            request.id, request.prompt_ids.size() + bos_tokens,
                            s.has_bos ? " (with BOS)" : "", context));
  }
  if (!request.prompt_ids.empty()) {
    for (int id : request.prompt_ids) {
      if (id < 0 || id >= vocab_size) {
        throw Error(fmt::format("request {}: prompt token id {} is outside the vocabulary [0, {})",
                                request.id, id, vocab_size));
      }
    }
    s.tokens.reserve(request.prompt_ids.size() + bos_tokens);
    if (s.has_bos) s.tokens.push_back(bos);
    s.tokens.insert(s.tokens.end(), request.prompt_ids.begin(), request.prompt_ids.end());
  } else if (request.prompt_len > 0) {
    if (s.has_bos) s.tokens.push_back(bos);
    const std::vector<int> made_up = synthetic_prompt(
        request.id, request.prompt_len - static_cast<int>(bos_tokens), vocab_size);
    s.tokens.insert(s.tokens.end(), made_up.begin(), made_up.end());
  } else {
    if (!tokenizer) {
      throw Error(
          fmt::format("request {} has a text prompt but no tokenizer was given", request.id));
    }
    s.tokens = tokenizer->encode(request.prompt, /*bos=*/true);
  }
  s.prompt_tokens = static_cast<int>(s.tokens.size());
  if (s.prompt_tokens > context) {
    throw Error(fmt::format("request {}: the prompt is {} tokens but the context is {}", request.id,
                            s.prompt_tokens, context));
  }
  // The last generated token is never forwarded, so P + n - 1 positions must fit: as generate()
  // with steps = context.
  s.max_new_tokens = std::min(request.max_tokens, context - s.prompt_tokens + 1);
  s.prefill_target = s.prompt_tokens;
  s.timeline.arrival = request.arrival;
  if (tokenizer)
    s.end_tokens = tokenizer->end_of_generation_ids();
  else
    s.end_tokens = {kBosToken};  // llama2.c models end a text with BOS
  return s;
}

void continue_conversation(Sequence& turn, const Sequence& previous, int context) {
  std::vector<int> tokens = previous.tokens;
  if (previous.stop_reason == StopReason::eos && previous.ends_with_end_token()) tokens.pop_back();
  // The turn's own prompt, without the BOS that only a conversation's first turn carries.
  tokens.insert(tokens.end(), turn.tokens.begin() + (turn.has_bos ? 1 : 0),
                turn.tokens.begin() + turn.prompt_tokens);
  if (static_cast<long>(tokens.size()) > context) {
    throw Error(
        fmt::format("request {} continues request {}: the conversation is {} tokens, over "
                    "the context of {}",
                    turn.request.id, previous.request.id, tokens.size(), context));
  }
  turn.tokens = std::move(tokens);
  turn.prompt_tokens = static_cast<int>(turn.tokens.size());
  turn.prefill_target = turn.prompt_tokens;
  turn.max_new_tokens = std::min(turn.request.max_tokens, context - turn.prompt_tokens + 1);
}

Sequence make_branch(const Sequence& parent, int branch) {
  Sequence s;
  s.request = parent.request;
  s.request.sampling.seed = parent.request.sampling.seed + 7919u * std::uint64_t(branch);
  s.tokens.assign(parent.tokens.begin(), parent.tokens.begin() + parent.prompt_tokens);
  s.prompt_tokens = parent.prompt_tokens;
  s.prefill_target = parent.prompt_tokens;
  s.max_new_tokens = parent.max_new_tokens;
  s.timeline.arrival = parent.timeline.arrival;
  s.end_tokens = parent.end_tokens;
  s.has_bos = parent.has_bos;
  s.branch = branch;
  return s;
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::none:
      return "none";
    case StopReason::eos:
      return "eos";
    case StopReason::max_tokens:
      return "max_tokens";
    case StopReason::context:
      return "context";
  }
  return "?";
}

}  // namespace inferlab
