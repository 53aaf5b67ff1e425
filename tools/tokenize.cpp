/// @file tokenize.cpp
/// @brief `inferlab_tokenize`: look at what the tokenizer does to your text, one line at a time.
///
///     echo "Hello world" | inferlab_tokenize --tokenizer tokenizer.bin
///     1 15043 3186
///     echo "Hello world" | inferlab_tokenize --tokenizer tokenizer.bin --pieces
///          1  <s> (BOS)
///      15043  " Hello"
///       3186  " world"
///     echo "1 15043 3186" | inferlab_tokenize --tokenizer tokenizer.bin --decode
///     Hello world
///
///     printf 'line one\nline two' | inferlab_tokenize --tokenizer model.gguf --whole --json
///     {"ids": [...]}
///
/// The tokenizer (a llama2.c tokenizer.bin, or a GGUF model or vocabulary file) is found as the
/// chapters find theirs: a path is taken as given, a bare name is
/// looked for in $INFERLAB_MODELS, then in the repository's models/; the default is tok512.bin,
/// the tokenizer of the default model (stories260K).
/// Encoding prints, for each input line (without its newline), the ids with BOS first (when the
/// tokenizer adds one; --no-bos never); --whole takes all of standard input, newlines included,
/// as one text, and --json prints the ids as `{"ids": [...]}`. --parse-special turns special-
/// token text (`<|im_start|>`) into its token. Input is
/// taken literally: a backslash followed by `n` is two characters, not a newline. Decoding reads
/// lines of space-separated ids and prints the text they decode to, as Tokenizer::decode gives
/// it (BOS contributes nothing and the dummy-prefix space after it is dropped).
#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace {

using inferlab::Error;
using inferlab::Tokenizer;

// A line of input is bounded (64 MiB of text): beyond that it is not a line of text.
constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

/// Parses one line of whitespace-separated token ids; throws naming the first bad field.
std::vector<int> parse_ids(std::string_view line, long line_number, const Tokenizer& tok) {
  std::vector<int> ids;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
    const std::string_view field = line.substr(i, end - i);
    int id = 0;
    const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), id);
    if (ec != std::errc() || ptr != field.data() + field.size()) {
      throw Error(fmt::format("line {}: '{}' is not a token id", line_number, field));
    }
    if (id < 0 || id >= tok.vocab_size()) {
      throw Error(fmt::format("line {}: token id {} is outside the vocabulary [0, {})", line_number,
                              id, tok.vocab_size()));
    }
    ids.push_back(id);
    i = end;
  }
  return ids;
}

// A piece as a learner should see it: quoted, with the space SentencePiece marks made visible
// as itself and control bytes escaped, so that " upon" and "upon" cannot be confused.
std::string show_piece(const Tokenizer& tok, int id) {
  if (tok.kind() == inferlab::TokenizerKind::llama2c) {
    if (id == inferlab::kBosToken) return "<s> (BOS)";
    if (id == inferlab::kEosToken) return "</s> (EOS)";
  } else if (tok.type(id) == inferlab::TokenType::control) {
    return tok.piece(id) + (id == tok.bos_id() ? " (BOS)" : id == tok.eos_id() ? " (EOS)" : "");
  }
  std::string out = "\"";
  for (const char ch : tok.piece(id)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// Prints the ids @p text encodes to: space-separated on one line, as JSON, or one piece a
/// line followed by a blank line.
void print_ids(const Tokenizer& tok, std::string_view text, const inferlab::EncodeOptions& options,
               bool json, bool pieces) {
  const std::vector<int> ids = tok.encode(text, options);
  if (json) {
    std::cout << fmt::format("{{\"ids\": [{}]}}\n", fmt::join(ids, ", "));
  } else if (pieces) {
    for (const int id : ids) std::cout << fmt::format("{:6}  {}\n", id, show_piece(tok, id));
    std::cout << '\n';  // a blank line between input lines
  } else {
    for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text to token ids (one line of ids per input line), or decode ids to text"};
  std::string tokenizer_name = "tok512.bin";
  bool decode = false, pieces = false, whole = false, json = false;
  inferlab::EncodeOptions encoding;
  bool no_bos = false;
  app.add_option(
         "--tokenizer", tokenizer_name,
         "tokenizer file (llama2.c tokenizer.bin, or a GGUF model or vocabulary): a path, or a "
         "name looked for in "
         "$INFERLAB_MODELS, then the repository's models/ (as the chapters look for models)")
      ->capture_default_str();
  app.add_flag("--decode", decode, "read lines of token ids and print the text they decode to");
  app.add_flag(
      "--pieces", pieces,
      "print each token on its own line: its id, then its piece as the vocabulary holds it");
  app.add_flag("--whole", whole,
               "encode all of standard input (newlines included) as one text, not line by line");
  app.add_flag("--json", json, "print the ids of each encoded text as {\"ids\": [...]}");
  app.add_flag("--parse-special", encoding.parse_special,
               "special-token text (<|im_start|>, <s>) becomes its one token");
  app.add_flag("--no-bos", no_bos, "do not prepend BOS");
  return inferlab::run_main(app, argc, argv, [&] {
    if (decode && pieces) throw Error("--pieces applies only to encoding, not with --decode");
    if (decode && (whole || json || encoding.parse_special || no_bos))
      throw Error("--whole, --json, --parse-special and --no-bos apply only to encoding");
    if (pieces && json) throw Error("--pieces and --json are two different outputs: pick one");
    encoding.add_bos = !no_bos;
    const Tokenizer tok = Tokenizer::load(inferlab::find_tokenizer(tokenizer_name, "", 0));
    if (whole) {
      std::string text;  // all of standard input, byte for byte
      std::vector<char> buffer(std::size_t{1} << 16);
      while (std::cin.read(buffer.data(), std::streamsize(buffer.size())) ||
             std::cin.gcount() > 0) {
        text.append(buffer.data(), static_cast<std::size_t>(std::cin.gcount()));
        if (text.size() > kMaxLineBytes)
          throw Error(fmt::format("standard input is larger than {} bytes", kMaxLineBytes));
      }
      print_ids(tok, text, encoding, json, pieces);
      std::cout.flush();
      return 0;
    }
    std::string line;
    long line_number = 0;
    while (true) {
      ++line_number;
      try {
        if (!inferlab::read_bounded_line(std::cin, line, kMaxLineBytes)) break;
      } catch (const Error& e) {
        throw Error(fmt::format("line {}: {}", line_number, e.what()));
      }
      if (decode) {
        std::cout << tok.decode(parse_ids(line, line_number, tok)) << '\n';
      } else {
        print_ids(tok, line, encoding, json, pieces);
      }
    }
    std::cout.flush();
    return 0;
  });
}
