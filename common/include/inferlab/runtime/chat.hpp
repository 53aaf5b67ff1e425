#pragma once
/// @file chat.hpp
/// @brief A conversation with an instruct model: each turn renders the whole conversation with
/// the model's chat template, tokenizes it with special tokens parsed (the template writes BOS
/// itself when the model wants one, so none is added), generates until the end-of-turn token,
/// and keeps the answer for the next turn.

#include <string>
#include <vector>

#include "inferlab/model/chat_template.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/generate.hpp"

namespace inferlab {

/// @brief The chat template for @p tokenizer: the built-in one called @p name when given,
/// else the one that recognises the model's `tokenizer.chat_template`.
/// @throws inferlab::Error if @p name is unknown, or the model has no template (naming the
/// built-in ones to choose from), or no built-in renderer recognises it.
ChatTemplate choose_chat_template(const Tokenizer& tokenizer, const std::string& name);

/// @brief The messages of a conversation and how to render its next turn.
class ChatSession {
 public:
  /// @param tokenizer the model's tokenizer (must outlive the session)
  /// @param chat_template the renderer (choose_chat_template())
  /// @param system the system message; "" leaves it out, so the template's own default (if it
  ///        has one) applies
  ChatSession(const Tokenizer& tokenizer, ChatTemplate chat_template, const std::string& system);

  /// @brief The text the template renders for the conversation so far plus @p user, ending with
  /// the marker that opens the assistant's turn.
  std::string render_turn(const std::string& user) const;

  /// @brief @p base with the prompt set to render_turn(@p user), special tokens parsed, no BOS
  /// added, no prompt echo, and the template's end-of-turn token as a stop token.
  GenerateOptions turn_options(const std::string& user, GenerateOptions base) const;

  /// @brief Records a finished turn: the user's message and the model's answer.
  void add_turn(const std::string& user, const std::string& answer);

  /// @brief The renderer in use.
  const ChatTemplate& chat_template() const { return template_; }
  /// @brief The conversation so far.
  const std::vector<ChatMessage>& messages() const { return messages_; }

 private:
  const Tokenizer* tokenizer_;
  ChatTemplate template_;
  std::vector<ChatMessage> messages_;
  ChatSpecialTokens tokens_;
};

}  // namespace inferlab
