// Every generation loop ends where the tokenizer says a generation ends: the serving engine
// (chapters 04-06), speculative and plain decoding (chapter 07) and constrained generation
// (chapter 08) stop at the vocabulary's end-of-generation ids (`<|im_end|>` for a ChatML
// model), not at llama2.c's BOS. The model is a synthetic one; its greedy continuation of BOS
// is found first, then a byte-level vocabulary is made whose `<|im_end|>` is an id greedy
// decoding reaches a few tokens in, so the loops must stop exactly there.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inferlab/constrain/constraint.hpp"
#include "inferlab/constrain/regex.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/speculative_decoder.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/live_engine.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

constexpr int kMaxTokens = 24;

/// A gpt2 vocabulary of @p V tokens: id @p im_end is the control token `<|im_end|>` (also
/// EOS, as in SmolLM2), every other id a text token "w<id>" (so ids 1 and 2, llama2.c's BOS
/// and EOS, are plain text here). Id 1 is its BOS, prepended to every text: the empty prompt
/// is BOS alone, as in a llama2.c vocabulary.
Tokenizer chat_vocabulary(int V, int im_end) {
  VocabularySpec v;
  v.model = "gpt2";
  v.pre = "smollm";
  for (int id = 0; id < V; ++id) {
    v.tokens.push_back(id == im_end ? "<|im_end|>" : fmt::format("w{}", id));
    v.types.push_back(id == im_end ? 3 : 1);
  }
  const int a = im_end == 3 ? 5 : 3, b = im_end == 4 ? 6 : 4;
  v.merges = {v.tokens[std::size_t(a)] + " " + v.tokens[std::size_t(b)]};
  v.eos_id = im_end;
  v.bos_id = kBosToken;
  v.add_bos = true;
  return Tokenizer::from_vocabulary(v);
}

struct Greedy {
  std::vector<int> tokens;  ///< BOS, then kMaxTokens greedy tokens
  std::size_t end_at = 0;   ///< index of the generated token chosen as `<|im_end|>`
};

/// The model's greedy continuation of BOS, served with ignore_eos (so the vocabulary's end
/// tokens do not matter), and the first generated token from the third on that is neither 1
/// nor 2 (llama2.c's BOS and EOS) and was not generated before: the id to make `<|im_end|>`.
Greedy greedy_continuation(const Model& model) {
  const Tokenizer any = chat_vocabulary(model.config().vocab_size, 0);
  Request r;
  r.max_tokens = kMaxTokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  const EngineRun run = run_real({r}, SchedulerConfig{}, RealEngine(&model, &any));
  Greedy g;
  g.tokens = run.requests.at(0).tokens;
  REQUIRE(g.tokens.size() == 1u + kMaxTokens);
  REQUIRE(g.tokens[0] == kBosToken);
  for (std::size_t i = 3; i < g.tokens.size(); ++i) {
    const int t = g.tokens[i];
    const auto before = g.tokens.begin() + std::ptrdiff_t(i);
    if (t != kBosToken && t != kEosToken && std::find(g.tokens.begin() + 1, before, t) == before) {
      g.end_at = i;
      break;
    }
  }
  REQUIRE(g.end_at > 0);
  return g;
}

/// The setup every end-token test shares: a synthetic stories260K model, its greedy
/// continuation of BOS, and a chat vocabulary whose `<|im_end|>` is the id chosen from it.
struct ChatCase {
  Model model = make_synthetic_model("stories260K");
  Greedy g = greedy_continuation(model);
  int im_end = g.tokens[g.end_at];
  Tokenizer chat = chat_vocabulary(model.config().vocab_size, im_end);
  /// What greedy decoding under `chat` gives: BOS, then the tokens up to `<|im_end|>`.
  std::vector<int> want{g.tokens.begin(), g.tokens.begin() + std::ptrdiff_t(g.end_at) + 1};
};

}  // namespace

TEST_CASE("the serving engine ends a request at the vocabulary's <|im_end|>, not at BOS",
          "[engine][unit]") {
  const ChatCase c;
  REQUIRE(c.chat.end_of_generation_ids() == std::vector<int>{c.im_end});

  Request first;  // the empty prompt: BOS alone
  first.max_tokens = kMaxTokens;
  first.sampling.temperature = 0.0f;
  Request turn = first;  // the conversation's next turn resends it without the <|im_end|>
  turn.id = 1;
  turn.parent = 0;
  turn.prompt_ids = {70};
  turn.max_tokens = 2;
  turn.ignore_eos = true;
  const EngineRun run = run_real({first, turn}, SchedulerConfig{}, RealEngine(&c.model, &c.chat));
  REQUIRE(run.requests.size() == 2);
  const RequestResult& r = run.requests[0];
  CHECK(r.tokens == c.want);
  CHECK(r.stop_reason == StopReason::eos);
  std::vector<int> resent(c.want.begin(), c.want.end() - 1);
  resent.push_back(70);
  CHECK(run.requests[1].prompt_tokens == resent);

  // Parallel samples carry the same end tokens.
  first.n = 2;
  const EngineRun pair = run_real({first}, SchedulerConfig{}, RealEngine(&c.model, &c.chat));
  REQUIRE(pair.requests.size() == 2);
  for (const RequestResult& b : pair.requests) {
    CHECK(b.tokens == c.want);
    CHECK(b.stop_reason == StopReason::eos);
  }

  // Without a tokenizer a sequence ends at BOS, llama2.c's end of text.
  Request by_length;
  by_length.prompt_len = 4;
  CHECK(make_sequence(by_length, nullptr, 512, 64).end_tokens == std::vector<int>{kBosToken});
}

TEST_CASE("the server's engine thread ends a choice at the vocabulary's <|im_end|>",
          "[engine][server]") {
  const ChatCase c;
  LiveEngineConfig config;
  config.memory.allocator = Allocator::paged;
  config.memory.budget_bytes = std::size_t(8) << 20;
  LiveEngine engine(c.model, c.chat, config);
  LiveRequest live;
  live.prompt = {kBosToken};
  live.max_tokens = kMaxTokens;
  live.sampling.temperature = 0.0f;
  const auto stream = engine.submit(live);
  std::vector<TokenEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!stream->wait(events, std::chrono::milliseconds(100)))
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  std::vector<int> tokens = {kBosToken};
  for (const TokenEvent& e : events)
    if (e.token >= 0) tokens.push_back(e.token);
  CHECK(tokens == c.want);
  REQUIRE(!events.empty());
  CHECK(events.back().finish == FinishReason::stop);
}

TEST_CASE("the simulator's placeholder tokens never end a request, whatever the vocabulary",
          "[engine][unit]") {
  // Placeholder id 0 is `<|im_end|>` here: the simulated clients still stop at output_len.
  const Tokenizer chat = chat_vocabulary(16, 0);
  SimEngine sim;
  sim.config = named_config("stories15M");
  sim.hardware = hardware_by_name("h100-sxm");
  sim.tokenizer = &chat;
  Request r;
  r.prompt_len = 8;
  r.max_tokens = 5;
  const EngineRun run = run_sim({r}, SchedulerConfig{}, sim);
  CHECK(run.requests.at(0).generated() == 5);
  CHECK(run.requests.at(0).stop_reason == StopReason::max_tokens);
}

TEST_CASE("speculative and plain decoding end at the end tokens they are given",
          "[speculative][unit]") {
  const ChatCase c;
  const std::vector<int> ends = {c.im_end};
  const std::vector<int>& want = c.want;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  SpecModel target(c.model);
  const std::vector<int> prompt = {kBosToken};
  const int steps = kMaxTokens;
  CHECK(plain_generate(target, prompt, steps, greedy, ends).tokens == want);
  NgramProposer ngram(2, 4, c.model.config().vocab_size);
  const SpecGeneration s = speculative_generate(target, ngram, prompt, steps, greedy, ends);
  CHECK(s.tokens == want);
  CHECK(s.generated == static_cast<int>(want.size() - prompt.size()));
}

TEST_CASE("constrained generation ends at the tokenizer's end token, allowed where it may end",
          "[constrain][unit]") {
  const ChatCase c;
  const std::vector<std::string> bytes = token_byte_strings(c.chat);
  CHECK(bytes[std::size_t(c.im_end)].empty());  // markup is never text
  CHECK(bytes[kBosToken] == fmt::format("w{}", kBosToken));  // id 1 is text in this vocabulary
  const Grammar grammar = regex_grammar("[w0-9]*");
  PushdownParser parser(grammar);
  const TokenTrie trie(bytes);
  MaskComputer masks(parser, trie, bytes, c.chat.eos_id());
  CHECK(masks.end_token() == c.im_end);

  ConstrainedOptions o;
  o.prompt = "";  // BOS alone, as greedy_continuation() served it
  o.steps = kMaxTokens;
  o.sampling.temperature = 0.0f;
  REQUIRE(c.chat.encode(o.prompt, o.encoding) == std::vector<int>{kBosToken});
  const std::vector<int> generated(c.want.begin() + 1, c.want.end());  // BOS was the prompt
  for (const bool constrained : {true, false}) {
    o.constrained = constrained;
    const ConstrainedResult r = generate_constrained(c.model, c.chat, parser, masks, bytes, o);
    INFO("constrained " << constrained);
    CHECK(r.tokens == generated);  // the mask allows every text token: the same greedy tokens
    CHECK(r.ended);
    CHECK(r.valid);  // every text token matches, and the end token came where it may end
  }
}

TEST_CASE("a prompt starts with the vocabulary's own BOS, or with none", "[engine][unit]") {
  // SmolLM2's layout: id 1 is <|im_start|>, a chat marker, and the vocabulary adds no BOS.
  VocabularySpec v;
  v.model = "gpt2";
  v.pre = "smollm";
  for (int id = 0; id < 512; ++id) {
    v.tokens.push_back(id == 1 ? "<|im_start|>" : fmt::format("w{}", id));
    v.types.push_back(id == 1 ? 3 : 1);
  }
  v.merges = {"w3 w4"};
  v.bos_id = 1;
  v.add_bos = false;
  const Tokenizer no_bos = Tokenizer::from_vocabulary(v);
  CHECK(prompt_bos(&no_bos) == -1);
  Request by_length;
  by_length.prompt_len = 6;
  const Sequence made_up = make_sequence(by_length, &no_bos, 512, 64);
  CHECK_FALSE(made_up.has_bos);
  REQUIRE(made_up.tokens.size() == 6u);
  for (int id : made_up.tokens) CHECK((id >= 3 && id < 512));
  Request by_ids;
  by_ids.prompt_ids = {70, 71};
  const Sequence given = make_sequence(by_ids, &no_bos, 512, 64);
  CHECK(given.tokens == std::vector<int>{70, 71});
  // The next turn appends its whole prompt: there is no BOS to drop.
  Request turn;
  turn.id = 1;
  turn.parent = 0;
  turn.prompt_ids = {80};
  Sequence next = make_sequence(turn, &no_bos, 512, 64);
  continue_conversation(next, given, 64);
  CHECK(next.tokens == std::vector<int>{70, 71, 80});
  CHECK(next.prompt_tokens == 3);

  // A vocabulary that adds a BOS gets its own id; without a tokenizer, llama2.c's id 1.
  v.tokens[1] = "w1";
  v.types[1] = 1;
  v.bos_id = 5;
  v.add_bos = true;
  const Tokenizer with_bos = Tokenizer::from_vocabulary(v);
  CHECK(prompt_bos(&with_bos) == 5);
  const Sequence first = make_sequence(by_length, &with_bos, 512, 64);
  CHECK(first.has_bos);
  REQUIRE(first.tokens.size() == 6u);
  CHECK(first.tokens[0] == 5);
  // The same made-up ids after the BOS as a llama2.c model gets.
  const Sequence llama2c = make_sequence(by_length, nullptr, 512, 64);
  CHECK(llama2c.tokens[0] == kBosToken);
  CHECK(std::equal(first.tokens.begin() + 1, first.tokens.end(), llama2c.tokens.begin() + 1));
  CHECK(make_sequence(by_ids, &with_bos, 512, 64).tokens == std::vector<int>{5, 70, 71});
  Sequence next_with_bos = make_sequence(turn, &with_bos, 512, 64);
  continue_conversation(next_with_bos, make_sequence(by_ids, &with_bos, 512, 64), 64);
  CHECK(next_with_bos.tokens == std::vector<int>{5, 70, 71, 80});
}
