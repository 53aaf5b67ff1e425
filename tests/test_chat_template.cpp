// Tests of the built-in chat renderers against tests/golden/chat_templates.json: what each
// family's own Jinja source renders for a few conversations (system + multi-turn + generation
// prompt), written by scripts/golden/chat_templates.py. Each source must be recognised as its
// family, and the renderer must give the same text, or refuse where the template raises.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/model/chat_template.hpp"
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

TEST_CASE("chat renderers give what each template's own Jinja source renders",
          "[chat][golden]") {
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
