/// @file chat_template.cpp
/// @brief The built-in chat renderers and the recognition of a model's Jinja template.
///
/// Each renderer writes exactly what its family's reference template writes (the sources are
/// in scripts/golden/chat_templates/, with where each comes from); the comments quote the
/// Jinja they follow.
#include "inferlab/model/chat_template.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

/// Jinja's `trim` and Python's `str.strip()` on the ASCII white space.
std::string trim(const std::string& s) {
  constexpr const char* kSpace = " \t\n\r\f\v";
  const std::size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

/// The Jinja templates' `raise_exception('Conversation roles must alternate ...')`: message i
/// (counted from the first non-system one) must be a user message when i is even.
void require_alternation(const std::vector<ChatMessage>& messages, std::size_t first,
                         const std::string& name) {
  for (std::size_t i = first; i < messages.size(); ++i) {
    if ((messages[i].role == "user") != ((i - first) % 2 == 0)) {
      throw Error(
          fmt::format("the {} chat template needs the roles to alternate user/assistant "
                      "(message {} is '{}')",
                      name, i, messages[i].role));
    }
  }
}

// ChatML (SmolLM2, Qwen2):
//   {% if loop.first and messages[0]['role'] != 'system' %}<|im_start|>system\nDEFAULT<|im_end|>\n
//   <|im_start|>ROLE\nCONTENT<|im_end|>\n ... {% if add_generation_prompt %}<|im_start|>assistant\n
std::string render_chatml(const std::vector<ChatMessage>& messages, bool generation,
                          const std::string& default_system) {
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && messages[0].role != "system" && !default_system.empty())
      out += fmt::format("<|im_start|>system\n{}<|im_end|>\n", default_system);
    out += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", messages[i].role, messages[i].content);
  }
  if (generation) out += "<|im_start|>assistant\n";
  return out;
}

// Llama 3 (Meta-Llama-3-8B-Instruct): BOS once, then per message
//   <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT|trim<|eot_id|>
std::string render_llama3(const std::vector<ChatMessage>& messages, bool generation,
                          const ChatSpecialTokens& tokens) {
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += tokens.bos;
    out += fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>", messages[i].role,
                       trim(messages[i].content));
  }
  if (generation) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Llama 2 (Llama-2-13b-chat-hf): a system message goes inside the first user turn,
//   BOS[INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER|strip [/INST] ASSISTANT|strip EOS BOS[INST] ...
// The answer follows [/INST] directly: there is no separate generation prompt.
std::string render_llama2(const std::vector<ChatMessage>& messages,
                          const ChatSpecialTokens& tokens) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const std::size_t first = has_system ? 1 : 0;
  require_alternation(messages, first, "llama2");
  std::string out;
  for (std::size_t i = first; i < messages.size(); ++i) {
    std::string content = messages[i].content;
    if (i == first && has_system)
      content = fmt::format("<<SYS>>\n{}\n<</SYS>>\n\n{}", messages[0].content, content);
    if (messages[i].role == "user") {
      out += fmt::format("{}[INST] {} [/INST]", tokens.bos, trim(content));
    } else if (messages[i].role == "assistant") {
      out += fmt::format(" {} {}", trim(content), tokens.eos);
    }
  }
  return out;
}

// Mistral Instruct ("v1" with a system message, Mistral-7B-Instruct-v0.2): BOS, then
//   " [INST] " + (SYSTEM + "\n\n" in the first turn) + USER + " [/INST]", " " + ASSISTANT + EOS
std::string render_mistral(const std::vector<ChatMessage>& messages,
                           const ChatSpecialTokens& tokens) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const std::size_t first = has_system ? 1 : 0;
  require_alternation(messages, first, "mistral");
  std::string out = tokens.bos;
  for (std::size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      const std::string system = i == first && has_system ? messages[0].content + "\n\n" : "";
      out += fmt::format(" [INST] {}{} [/INST]", system, m.content);
    } else {  // alternation leaves only assistant messages here
      out += fmt::format(" {}{}", m.content, tokens.eos);
    }
  }
  return out;
}

// Gemma (gemma-2-2b-it): BOS, then <start_of_turn>ROLE\nCONTENT|trim<end_of_turn>\n with the
// assistant called "model"; no system role.
std::string render_gemma(const std::vector<ChatMessage>& messages, bool generation,
                         const ChatSpecialTokens& tokens) {
  if (!messages.empty() && messages[0].role == "system")
    throw Error("the gemma chat template has no system role (its models take none)");
  require_alternation(messages, 0, "gemma");
  std::string out = tokens.bos;
  for (const ChatMessage& m : messages) {
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += fmt::format("<start_of_turn>{}\n{}<end_of_turn>\n", role, trim(m.content));
  }
  if (generation) out += "<start_of_turn>model\n";
  return out;
}

// Phi-3 (Phi-3.5-mini-instruct): <|ROLE|>\nCONTENT<|end|>\n per message (an empty system
// message is left out), then <|assistant|>\n to generate, else EOS.
std::string render_phi3(const std::vector<ChatMessage>& messages, bool generation,
                        const ChatSpecialTokens& tokens) {
  std::string out;
  for (const ChatMessage& m : messages) {
    const bool shown =
        (m.role == "system" && !m.content.empty()) || m.role == "user" || m.role == "assistant";
    if (shown) out += fmt::format("<|{}|>\n{}<|end|>\n", m.role, m.content);
  }
  out += generation ? "<|assistant|>\n" : tokens.eos;
  return out;
}

/// ChatML templates that insert a system message when the conversation has none write it as a
/// literal: `'<|im_start|>system\nTEXT<|im_end|>\n'`. Returns TEXT, or "".
std::string chatml_default_system(const std::string& source) {
  const std::string marker = "<|im_start|>system";
  std::size_t at = source.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  // The newline is a real one or Jinja's escape "\n" inside the string literal.
  if (source.compare(at, 1, "\n") == 0) {
    at += 1;
  } else if (source.compare(at, 2, "\\n") == 0) {
    at += 2;
  } else {
    return "";
  }
  const std::size_t end = source.find("<|im_end|>", at);
  if (end == std::string::npos) return "";
  std::string text = source.substr(at, end - at);
  // A message written from a variable (`' + message['content'] + '`) is not a default.
  if (text.find_first_of("'\"{}") != std::string::npos) return "";
  return text;
}

}  // namespace

const std::vector<std::string>& ChatTemplate::names() {
  static const std::vector<std::string> names = {"chatml",  "llama3", "llama2",
                                                 "mistral", "gemma",  "phi3"};
  return names;
}

ChatTemplate ChatTemplate::named(const std::string& name) {
  for (const std::string& known : names()) {
    if (known == name) {
      ChatTemplate t;
      t.name_ = name;
      return t;
    }
  }
  throw Error(fmt::format("unknown chat template '{}'; built-in templates: {}", name,
                          fmt::join(names(), ", ")));
}

ChatTemplate ChatTemplate::recognise(const std::string& source) {
  auto has = [&](const char* marker) { return source.find(marker) != std::string::npos; };
  std::string name;
  if (has("<|im_start|>")) {
    name = "chatml";
  } else if (has("<|start_header_id|>")) {
    name = "llama3";
  } else if (has("<start_of_turn>")) {
    name = "gemma";
  } else if (has("<|user|>") && has("<|end|>")) {
    name = "phi3";
  } else if (has("[INST]") && has("<<SYS>>")) {
    name = "llama2";
  } else if (has("[INST]")) {
    name = "mistral";
  } else {
    throw Error(fmt::format(
        "no built-in chat template recognises the model's template (tokenizer.chat_template, "
        "{} characters); choose one by name: {}",
        source.size(), fmt::join(names(), ", ")));
  }
  ChatTemplate t = named(name);
  if (name == "chatml") t.default_system_ = chatml_default_system(source);
  return t;
}

std::string ChatTemplate::end_of_turn(const ChatSpecialTokens& tokens) const {
  if (name_ == "chatml") return "<|im_end|>";
  if (name_ == "llama3") return "<|eot_id|>";
  if (name_ == "gemma") return "<end_of_turn>";
  if (name_ == "phi3") return "<|end|>";
  return tokens.eos;  // llama2, mistral
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt,
                                 const ChatSpecialTokens& tokens) const {
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      throw Error(
          fmt::format("chat message role '{}': expected system, user or assistant", m.role));
    }
  }
  if (name_ == "chatml") return render_chatml(messages, add_generation_prompt, default_system_);
  if (name_ == "llama3") return render_llama3(messages, add_generation_prompt, tokens);
  if (name_ == "llama2") return render_llama2(messages, tokens);
  if (name_ == "mistral") return render_mistral(messages, tokens);
  if (name_ == "gemma") return render_gemma(messages, add_generation_prompt, tokens);
  return render_phi3(messages, add_generation_prompt, tokens);
}

}  // namespace inferlab
