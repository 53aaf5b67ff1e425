/// @file bpe_tokenizer.cpp
/// @brief Byte-level BPE (GGUF `gpt2`: GPT-2, Llama 3, Qwen2, SmolLM2, DeepSeek Coder): the
/// merges table, and encoding a text fragment: pre-tokenizer split, bytes to characters, merges
/// by rank.
///
/// Unlike SentencePiece, byte-level BPE never needs a fallback: every byte has a character
/// (bpe.hpp's byte_level_chars()) and every such character is a token, so any byte string,
/// valid UTF-8 or not, encodes.
#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/model/bpe.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

void Tokenizer::init_byte_level(const VocabularySpec& spec) {
  pre_name_ = spec.pre;
  if (spec.pre.empty()) {
    throw Error(fmt::format(
        "the gpt2 vocabulary names no pre-tokenizer (tokenizer.ggml.pre); supported: {}",
        fmt::join(PreTokenizer::supported_names(), ", ")));
  }
  pre_ = PreTokenizer::named(spec.pre);
  // Llama 3's tokenizer takes a word that is already a token as it is, without merging (its
  // merges cannot always rebuild a long token); it also starts every text with BOS.
  ignore_merges_ = spec.pre == "llama-bpe";
  add_bos_ = spec.pre == "llama-bpe";

  if (spec.merges.empty()) throw Error("the gpt2 vocabulary has no merges (tokenizer.ggml.merges)");
  merge_ranks_.reserve(spec.merges.size());
  for (std::size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const std::string& line = spec.merges[rank];
    // "left right": the separator is the first space after the first character (no
    // byte-level piece contains a space: the space byte is written 'Ġ').
    const std::size_t space = line.find(' ', 1);
    if (space == std::string::npos || space + 1 == line.size()) {
      throw Error(fmt::format("merge {} '{}' is not two tokens separated by a space", rank, line));
    }
    const std::string_view left = std::string_view(line).substr(0, space);
    const std::string_view right = std::string_view(line).substr(space + 1);
    for (const std::string_view part : {left, right}) {
      if (find(part) < 0)
        throw Error(
            fmt::format("merge {} '{}' names '{}', which is not a token", rank, line, part));
    }
    merge_ranks_.emplace(line, static_cast<int>(rank));  // the first of duplicate lines wins
  }
}

void Tokenizer::encode_byte_level(std::string_view text, std::vector<int>& out) const {
  std::string key;
  for (const std::string_view word : pre_->split(text)) {
    const std::string chars = to_byte_level(word);
    if (ignore_merges_) {
      if (const int id = find(chars); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    // One symbol per character (each byte-level character is one or two UTF-8 bytes).
    std::vector<std::string> symbols;
    for (std::size_t i = 0; i < chars.size();) {
      const std::size_t len = static_cast<unsigned char>(chars[i]) < 0x80 ? 1 : 2;
      symbols.push_back(chars.substr(i, len));
      i += len;
    }
    // The earlier a merge is listed, the sooner it applies: priority = -rank.
    merge_symbols(symbols, [&](std::string_view left, std::string_view right) {
      key.assign(left);
      key += ' ';
      key += right;
      const auto it = merge_ranks_.find(key);
      return it == merge_ranks_.end() ? std::nullopt
                                      : std::optional<double>(-static_cast<double>(it->second));
    });
    for (const std::string& symbol : symbols) {
      if (const int id = find(symbol); id >= 0) {
        out.push_back(id);
        continue;
      }
      // A merge whose result is not a token: its characters one by one.
      for (std::size_t i = 0; i < symbol.size();) {
        const std::size_t len = static_cast<unsigned char>(symbol[i]) < 0x80 ? 1 : 2;
        const std::string one = symbol.substr(i, len);
        const int id = find(one);
        if (id < 0) {
          throw Error(
              fmt::format("cannot encode '{}': the vocabulary has no token for its byte", one));
        }
        out.push_back(id);
        i += len;
      }
    }
  }
}

}  // namespace inferlab
