#pragma once
/// @file chat_template.hpp
/// @brief Chat templates: how an instruct model wants a conversation written as one text,
/// with its role markers (`<|im_start|>user`, `[INST]`, `<start_of_turn>`...), before it is
/// tokenized with special tokens parsed.
///
/// A model file carries its template as Jinja source (`tokenizer.chat_template`). InferLab has
/// no Jinja interpreter: it recognises which family the source belongs to and renders with a
/// built-in renderer written for that family. tests/golden/chat_templates.json holds what the
/// families' own Jinja sources render (scripts/golden/chat_templates.py), and a test compares.

#include <string>
#include <vector>

namespace inferlab {

/// @brief One message of a conversation.
struct ChatMessage {
  std::string role;     ///< "system", "user" or "assistant"
  std::string content;  ///< the text
};

/// @brief The texts of the special tokens a template writes (the vocabulary's BOS and EOS).
struct ChatSpecialTokens {
  std::string bos;  ///< e.g. "<s>", "<|begin_of_text|>", "<bos>"
  std::string eos;  ///< e.g. "</s>", "<|im_end|>"
};

/// @brief A built-in chat renderer for one template family.
class ChatTemplate {
 public:
  /// @brief The renderer called @p name (one of names()).
  /// @throws inferlab::Error naming @p name and listing names() if there is none.
  static ChatTemplate named(const std::string& name);

  /// @brief The renderer for a model's Jinja template text (`tokenizer.chat_template`),
  /// recognised by the markers it writes. ChatML's default system text, when the template
  /// inserts one for conversations without a system message, is taken from the source.
  /// @throws inferlab::Error saying that no renderer recognises it and listing names().
  static ChatTemplate recognise(const std::string& jinja_source);

  /// @brief The renderers' names: chatml, llama3, llama2, mistral, gemma, phi3.
  static const std::vector<std::string>& names();

  /// @brief This renderer's name.
  const std::string& name() const { return name_; }

  /// @brief The system text the template uses when the conversation has none ("" if none).
  const std::string& default_system() const { return default_system_; }

  /// @brief The text that ends a turn (`<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`, `<|end|>`;
  /// the EOS text for Llama 2 and Mistral): generation stops at its token.
  std::string end_of_turn(const ChatSpecialTokens& tokens) const;

  /// @brief Renders @p messages as the family's template does.
  /// @param messages the conversation, in order
  /// @param add_generation_prompt end with the marker that opens the assistant's turn
  /// @param tokens the vocabulary's BOS and EOS texts, which some templates write
  /// @return the text to tokenize with special tokens parsed (and no BOS added by the encoder:
  ///         a template that wants BOS writes it)
  /// @throws inferlab::Error for a conversation the template refuses: a role it has no marker
  ///         for, a system message where the family has none (Gemma), roles that do not
  ///         alternate user/assistant where the template requires it (Llama 2, Mistral, Gemma).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const ChatSpecialTokens& tokens) const;

 private:
  std::string name_;
  std::string default_system_;
};

}  // namespace inferlab
