#pragma once
/// @file chat_cli.hpp
/// @brief The `--chat` mode of a generating chapter: `--system`, `--chat-template`, and the loop
/// that runs one turn per `--prompt` (or, on a terminal, one turn per line typed).

#include <initializer_list>
#include <string>

#include <CLI/CLI.hpp>

#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/runtime/generate.hpp"

namespace inferlab {

/// @brief The chat flags.
struct ChatFlags {
  bool chat = false;          ///< --chat: talk to an instruct model through its chat template
  std::string system;         ///< --system: the system message ("" = the template's default)
  std::string chat_template;  ///< --chat-template: a built-in template by name ("" = the model's)
};

/// @brief Registers --chat, --system and --chat-template on @p app.
void add_chat_flags(CLI::App& app, ChatFlags& c);

/// @brief Refuses flags that do nothing in the mode @p c selects, before any work: --system
/// and --chat-template without --chat; with --chat, --dump-logits and the flags in
/// @p not_in_chat (a chapter's own, such as chapter 01's --reps) when given
/// (refuse_inapplicable_flags()).
/// @throws inferlab::Error naming the flag
void check_chat_flags(const CLI::App& app, const ChatFlags& c,
                      std::initializer_list<const char*> not_in_chat = {});

/// @brief Runs a chat with the model @p f names: on a terminal (and without --json) an
/// interactive loop, one turn per line typed until an empty line or end of input; otherwise one
/// turn with --prompt as the user's message. Each answer streams as it is generated; --json
/// prints the chapter's JSON object with `rendered_prompt` (the text the template produced).
/// @param chapter the chapter's name in the JSON output (e.g. "01_naive_loop")
/// @param title the run header's title
/// @param f the generation flags
/// @param c the chat flags
/// @param loop how each step's logits are obtained
/// @return the exit code
/// @throws inferlab::Error as load_model() and generate() do, and for a model without a chat
/// template when --chat-template is not given.
int run_chat(const char* chapter, const char* title, const GenerationFlags& f, const ChatFlags& c,
             LoopKind loop);

}  // namespace inferlab
