// The --chat mode of the generating chapters.
#include "inferlab/app/chat_cli.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "inferlab/app/cli_checks.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/input_checks.hpp"
#include "inferlab/model/chat_template.hpp"
#include "inferlab/runtime/chat.hpp"

namespace inferlab {

void add_chat_flags(CLI::App& app, ChatFlags& c) {
  app.add_flag("--chat", c.chat,
               "chat with an instruct model through its chat template: one turn per --prompt, "
               "or an interactive loop on a terminal");
  app.add_option("--system", c.system,
                 "system message of the chat (default: the template's own, if it has one)");
  app.add_option("--chat-template", c.chat_template,
                 "built-in chat template to use instead of the model's (" +
                     fmt::format("{}", fmt::join(ChatTemplate::names(), ", ")) + ")");
}

void check_chat_flags(const CLI::App& app, const ChatFlags& c,
                      std::initializer_list<const char*> not_in_chat) {
  std::vector<FlagScope> scopes;
  for (const char* flag : {"--system", "--chat-template"})
    scopes.push_back({flag, c.chat, "with --chat", ""});
  scopes.push_back({"--dump-logits", !c.chat, "", "--chat"});
  for (const char* flag : not_in_chat) scopes.push_back({flag, !c.chat, "", "--chat"});
  refuse_inapplicable_flags(app, scopes);
}

int run_chat(const char* chapter, const char* title, const GenerationFlags& f, const ChatFlags& c,
             LoopKind loop) {
  require_utf8(c.system, "--system");
  const LoadedModel m = load_model(f);
  ChatSession session(*m.tokenizer, choose_chat_template(*m.tokenizer, c.chat_template), c.system);
  const bool interactive = isatty(STDIN_FILENO) && !f.json;
  if (!f.json) {
    print_run_header(title, m, f,
                     fmt::format("chat:      template {}{}", session.chat_template().name(),
                                 interactive ? " (an empty line ends the chat)" : ""));
  }
  GenerateOptions base = generate_options(f);
  base.loop = loop;
  // One turn: stream the answer, keep it in the conversation.
  auto turn = [&](const std::string& user) {
    const GenerateOptions g = session.turn_options(user, base);
    GenerationResult r = generate(*m.model, *m.tokenizer, g, stdout_text_stream(f));
    session.add_turn(user, r.text);
    if (f.json) {
      nlohmann::json out = generation_json(chapter, m, f, r);
      out["prompt"] = user;
      out["rendered_prompt"] = g.prompt;
      std::cout << out.dump(1) << '\n';
    } else {
      std::printf("\n\n");
      print_generation_metrics(r);
    }
  };
  if (!interactive) {
    turn(f.prompt);
    return 0;
  }
  std::string line;
  while (true) {
    std::printf("\n> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line.empty()) break;
    require_utf8(line, "the message");
    std::printf("\n");
    turn(line);
  }
  return 0;
}

}  // namespace inferlab
