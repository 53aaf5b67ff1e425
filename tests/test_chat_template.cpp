// Tests of the built-in chat renderers against tests/golden/chat_templates.json: what each
// family's own Jinja source renders for a few conversations (system + multi-turn + generation
// prompt), written by scripts/golden/chat_templates.py. Each source must be recognised as its
// family, and the renderer must give the same text, or refuse where the template raises.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/model/chat_template.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/chat.hpp"
#include "inferlab/runtime/generate.hpp"
#include "test_support.hpp"

namespace {

using inferlab::ChatMessage;
using inferlab::ChatSpecialTokens;
using inferlab::ChatTemplate;

nlohmann::json read_golden() {
  std::ifstream in(std::string(INFERLAB_SOURCE_DIR) + "/tests/golden/chat_templates.json");
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

}  // namespace

TEST_CASE("chat renderers give what each template's own Jinja source renders", "[chat][golden]") {
  const nlohmann::json golden = read_golden();
  REQUIRE(golden.at("templates").size() >= 6);
  for (const auto& t : golden.at("templates")) {
    const std::string file = t.at("file");
    INFO("template " << file);
    const ChatTemplate renderer = ChatTemplate::recognise(t.at("source").get<std::string>());
    CHECK(renderer.name() == t.at("renderer").get<std::string>());
    const ChatSpecialTokens tokens{t.at("bos_token"), t.at("eos_token")};
    for (const auto& c : t.at("cases")) {
      std::vector<ChatMessage> messages;
      for (const auto& m : c.at("messages")) messages.push_back({m.at("role"), m.at("content")});
      const bool generation = c.at("add_generation_prompt");
      INFO("case " << c.at("messages").dump());
      if (c.contains("error")) {
        CHECK_THROWS_AS(renderer.render(messages, generation, tokens), inferlab::Error);
      } else {
        CHECK(renderer.render(messages, generation, tokens) == c.at("expected").get<std::string>());
      }
    }
  }
}

TEST_CASE("chat templates: default system text, end of turn, names and errors", "[chat][unit]") {
  const nlohmann::json golden = read_golden();
  const std::string smollm2 = golden.at("templates").at(0).at("source");
  const ChatTemplate chatml = ChatTemplate::recognise(smollm2);
  CHECK(chatml.default_system() ==
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  CHECK(chatml.end_of_turn({"<s>", "</s>"}) == "<|im_end|>");
  CHECK(ChatTemplate::named("llama2").end_of_turn({"<s>", "</s>"}) == "</s>");
  CHECK(ChatTemplate::named("llama3").default_system().empty());
  CHECK_THROWS_WITH(ChatTemplate::named("vicuna"),
                    Catch::Contains("'vicuna'") && Catch::Contains("chatml, llama3, llama2"));
  CHECK_THROWS_WITH(ChatTemplate::recognise("{{ messages[0]['content'] }}"),
                    Catch::Contains("no built-in chat template") && Catch::Contains("gemma"));
  CHECK_THROWS_WITH(chatml.render({{"tool", "x"}}, true, {}), Catch::Contains("'tool'"));
  CHECK_THROWS_WITH(ChatTemplate::named("llama2").render({{"assistant", "x"}}, true, {}),
                    Catch::Contains("alternate"));
}

TEST_CASE("a chat turn on SmolLM2: markup as single tokens, no BOS added, stop at <|im_end|>",
          "[chat][golden]") {
  const inferlab::Tokenizer t =
      inferlab::Tokenizer::load(inferlab::test::model_file("SmolLM2-135M-Instruct.Q4_1.gguf"));
  const ChatTemplate chatml = inferlab::choose_chat_template(t, "");
  CHECK(chatml.name() == "chatml");
  const inferlab::ChatSession session(t, chatml, "");
  const inferlab::GenerateOptions g = session.turn_options("Hi", {});
  CHECK(g.prompt ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<int> ids = t.encode(g.prompt, g.encoding);
  const int start = t.find("<|im_start|>"), end = t.find("<|im_end|>");
  CHECK(ids.front() == start);  // the template's first marker, no BOS before it
  CHECK(std::count(ids.begin(), ids.end(), start) == 3);
  CHECK(std::count(ids.begin(), ids.end(), end) == 2);
  CHECK(g.stop_tokens == std::vector<int>{end});
  CHECK_FALSE(g.echo_prompt);
}

TEST_CASE("generation stops at a stop token and reports eos", "[chat][unit]") {
  const inferlab::Model model = inferlab::make_synthetic_model("stories260K");
  const inferlab::Tokenizer tok = inferlab::Tokenizer::synthetic(model.config().vocab_size);
  inferlab::GenerateOptions g;
  g.prompt = "Once upon a time";
  g.steps = 40;
  g.sampling.temperature = 0.0f;
  const inferlab::GenerationResult free_run = inferlab::generate(model, tok, g);
  const std::size_t P = free_run.prompt_tokens.size();
  REQUIRE(free_run.tokens.size() > P + 3);
  // Stop at the third generated token: greedy decoding repeats the run up to it.
  g.stop_tokens = {free_run.tokens[P + 2]};
  const inferlab::GenerationResult stopped = inferlab::generate(model, tok, g);
  CHECK(stopped.stop_reason == inferlab::GenerationStop::eos);
  const std::size_t first = std::find(free_run.tokens.begin() + std::ptrdiff_t(P),
                                      free_run.tokens.end(), g.stop_tokens[0]) -
                            free_run.tokens.begin();
  CHECK(stopped.tokens == std::vector<int>(free_run.tokens.begin(),
                                           free_run.tokens.begin() + std::ptrdiff_t(first) + 1));
  // Without echo, the text is the generated part only.
  g.echo_prompt = false;
  g.stop_tokens.clear();
  const inferlab::GenerationResult quiet = inferlab::generate(model, tok, g);
  CHECK(free_run.text.rfind("Once upon a time", 0) == 0);
  CHECK(quiet.text.rfind("Once upon a time", 0) == std::string::npos);
  CHECK(free_run.text == "Once upon a time" + quiet.text);
}
