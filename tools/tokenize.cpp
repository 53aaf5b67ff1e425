/// @file tokenize.cpp
/// @brief `inferlab_tokenize`: look at what the tokenizer does to your text, one line at a time.
///
///     echo "Hello world" | inferlab_tokenize --tokenizer models/tokenizer.bin
///     1 15043 3186
///     echo "1 15043 3186" | inferlab_tokenize --tokenizer models/tokenizer.bin --decode
///     Hello world
///
/// Encoding prints, for each input line (without its newline), the ids with BOS first. Input is
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

#include "inferlab/error.hpp"
#include "inferlab/input_checks.hpp"
#include "inferlab/safe_files.hpp"
#include "inferlab/tokenizer.hpp"

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
      throw Error(fmt::format("line {}: token id {} is outside the vocabulary [0, {})",
                              line_number, id, tok.vocab_size()));
    }
    ids.push_back(id);
    i = end;
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text to token ids (one line of ids per input line), or decode ids to text"};
  std::string tokenizer_path;
  bool decode = false;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.bin (llama2.c format)")->required();
  app.add_flag("--decode", decode, "read lines of token ids and print the text they decode to");
  return inferlab::run_main(app, argc, argv, [&] {
    const Tokenizer tok = Tokenizer::load(tokenizer_path);
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
        const std::vector<int> ids = tok.encode(line);
        for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
        std::cout << '\n';
      }
    }
    std::cout.flush();
    return 0;
  });
}
