// A conversation with an instruct model, one rendered turn at a time.
#include "inferlab/runtime/chat.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

ChatTemplate choose_chat_template(const Tokenizer& tokenizer, const std::string& name) {
  if (!name.empty()) return ChatTemplate::named(name);
  if (tokenizer.chat_template().empty()) {
    throw Error(
        fmt::format("the model has no chat template (tokenizer.chat_template); choose a "
                    "built-in one by name: {}",
                    fmt::join(ChatTemplate::names(), ", ")));
  }
  return ChatTemplate::recognise(tokenizer.chat_template());
}

ChatSession::ChatSession(const Tokenizer& tokenizer, ChatTemplate chat_template,
                         const std::string& system)
    : tokenizer_(&tokenizer), template_(std::move(chat_template)) {
  if (!system.empty()) messages_.push_back({"system", system});
  auto text_of = [&](int id) { return id >= 0 ? tokenizer.piece(id) : std::string(); };
  tokens_ = {text_of(tokenizer.bos_id()), text_of(tokenizer.eos_id())};
}

std::string ChatSession::render_turn(const std::string& user) const {
  std::vector<ChatMessage> messages = messages_;
  messages.push_back({"user", user});
  return template_.render(messages, /*add_generation_prompt=*/true, tokens_);
}

GenerateOptions ChatSession::turn_options(const std::string& user, GenerateOptions base) const {
  base.prompt = render_turn(user);
  base.encoding.add_bos = false;  // a template that wants BOS writes it
  base.encoding.parse_special = true;
  base.echo_prompt = false;
  if (const int end = tokenizer_->find(template_.end_of_turn(tokens_)); end >= 0)
    base.stop_tokens.push_back(end);
  return base;
}

void ChatSession::add_turn(const std::string& user, const std::string& answer) {
  messages_.push_back({"user", user});
  messages_.push_back({"assistant", answer});
}

}  // namespace inferlab
