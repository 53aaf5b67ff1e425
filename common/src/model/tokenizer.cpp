/// @file tokenizer.cpp
/// @brief The tokenizer: loading llama2.c's `tokenizer.bin` and GGUF vocabularies, cutting out
/// special tokens, SentencePiece BPE encoding by merge score with byte fallback, decoding
/// pieces, and a UTF-8-safe stream decoder for printing. (Byte-level BPE: bpe_tokenizer.cpp.)
///
/// The SentencePiece encoder follows karpathy/llama2.c `run.c` step by step; on the texts in the
/// golden file it gives exactly the ids SentencePiece gives. Two data structures differ: run.c
/// sorts the vocabulary and binary-searches it, we keep a hash map from piece to id; and run.c
/// rescans every pair after each merge (quadratic), we keep the pairs in a priority queue
/// (n log n, bpe.hpp's merge_symbols).
#include "inferlab/model/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/input_checks.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/base/utf8.hpp"
#include "inferlab/model/bpe.hpp"
#include "inferlab/model/gguf.hpp"

namespace inferlab {

namespace {

// The file is little-endian and we copy its bytes straight into int32/float32.
static_assert(std::endian::native == std::endian::little,
              "tokenizer.bin is little-endian; a big-endian host would need byte swaps");

constexpr int kFirstBytePiece = 3;  // ids 3..258 are the byte pieces <0x00>..<0xFF>
constexpr int kNumBytePieces = 256;
// A sanity bound on the header's max_token_length: real vocabularies stay below 100 bytes, so a
// larger value means the file is not a tokenizer (or is corrupt), not that a piece is long.
constexpr int kMaxSaneTokenLength = 1 << 16;
// A bound on the file itself, checked before reading: the largest real tokenizer.bin (a 128K
// vocabulary) is about 2 MB, so anything far larger is not one (or is /dev/zero).
constexpr std::size_t kMaxTokenizerBytes = std::size_t{64} << 20;

// ---------------------------------------------------------------------------------------------
// Reading the file
// ---------------------------------------------------------------------------------------------

/// A cursor over the whole file held in memory (the largest tokenizer is ~0.5 MB).
struct ByteReader {
  const std::vector<char>& bytes;
  std::size_t offset = 0;

  std::size_t remaining() const { return bytes.size() - offset; }

  /// Copies sizeof(T) bytes into @p out; false (nothing consumed) if fewer remain.
  template <class T>
  bool read(T& out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&out, bytes.data() + offset, sizeof(T));
    offset += sizeof(T);
    return true;
  }
};

/// What reading one piece record (float32 score, int32 length, bytes) found.
enum class PieceStatus { kPiece, kEndOfFile, kTruncated, kNegativeLength, kTooLong };

struct PieceRecord {
  float score = 0.0f;
  std::int32_t length = 0;
  std::string text;
};

/// Reads the next piece record. kEndOfFile means the file ended exactly before it (a clean end);
/// on any other failure the reader's position is unspecified.
PieceStatus read_piece(ByteReader& reader, int max_token_length, PieceRecord& record) {
  if (reader.remaining() == 0) return PieceStatus::kEndOfFile;
  if (!reader.read(record.score) || !reader.read(record.length)) return PieceStatus::kTruncated;
  if (record.length < 0) return PieceStatus::kNegativeLength;
  if (record.length > max_token_length) return PieceStatus::kTooLong;
  if (reader.remaining() < static_cast<std::size_t>(record.length)) return PieceStatus::kTruncated;
  record.text.assign(reader.bytes.data() + reader.offset, static_cast<std::size_t>(record.length));
  reader.offset += static_cast<std::size_t>(record.length);
  return PieceStatus::kPiece;
}

/// Reads the whole file, or throws naming why it cannot be read.
std::vector<char> read_file_bytes(const std::string& path) {
  const std::string bytes = read_regular_file(path, "tokenizer file", kMaxTokenizerBytes);
  return std::vector<char>(bytes.begin(), bytes.end());
}

// ---------------------------------------------------------------------------------------------
// Printable bytes
// ---------------------------------------------------------------------------------------------

/// The ASCII bytes llama2.c's safe_printf lets through: isprint or isspace in the C locale.
/// (Written out rather than calling <cctype>, whose answer depends on the current locale.)
bool is_printable_ascii(unsigned char b) {
  const bool printable = b >= 0x20 && b <= 0x7E;
  const bool whitespace = b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
  return printable || whitespace;
}

/// The byte a piece of the form `<0xXX>` stands for, if it has that form.
std::optional<unsigned char> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(piece[3]), lo = hex(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

/// SentencePiece's visible space, U+2581 LOWER ONE EIGHTH BLOCK, as GGUF vocabularies write it.
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";

/// @p text with every @p from replaced by @p to.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, from.size()) == from) {
      out += to;
      i += from.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

namespace {

/// Parses @p bytes (the contents of @p path). With @p expected_pieces, exactly that many pieces
/// must be present; without it, pieces are read until the file ends.
void parse_tokenizer_file(const std::string& path, const std::vector<char>& bytes,
                          std::optional<int> expected_pieces, int& max_token_length,
                          std::vector<std::string>& pieces, std::vector<float>& scores) {
  ByteReader reader{bytes};
  std::int32_t header = 0;
  if (!reader.read(header)) {
    throw Error(
        fmt::format("tokenizer file '{}': truncated header ({} bytes, need 4 for "
                    "max_token_length)",
                    path, bytes.size()));
  }
  if (header < 1 || header > kMaxSaneTokenLength) {
    throw Error(
        fmt::format("tokenizer file '{}': absurd max_token_length {} in the header "
                    "(expected 1..{}); is this a tokenizer.bin?",
                    path, header, kMaxSaneTokenLength));
  }
  max_token_length = header;

  // Turns a failed read of piece `index` into the message that explains it.
  auto fail = [&](PieceStatus status, std::size_t index, const PieceRecord& record,
                  std::size_t start) {
    switch (status) {
      case PieceStatus::kTruncated:
        throw Error(
            fmt::format("tokenizer file '{}': truncated piece {} (starts at byte {}, "
                        "the file ends inside it)",
                        path, index, start));
      case PieceStatus::kNegativeLength:
        throw Error(fmt::format("tokenizer file '{}': piece {} has negative length {}", path, index,
                                record.length));
      case PieceStatus::kTooLong:
        throw Error(
            fmt::format("tokenizer file '{}': piece {} has length {}, more than the "
                        "header's max_token_length {}",
                        path, index, record.length, max_token_length));
      default:
        throw Error(fmt::format("tokenizer file '{}': cannot read piece {}", path, index));
    }
  };

  PieceRecord record;
  const std::size_t limit =
      expected_pieces ? static_cast<std::size_t>(*expected_pieces) : bytes.size();
  while (pieces.size() < limit) {
    const std::size_t start = reader.offset;
    const PieceStatus status = read_piece(reader, max_token_length, record);
    if (status == PieceStatus::kEndOfFile) break;
    if (status != PieceStatus::kPiece) fail(status, pieces.size(), record, start);
    if (!std::isfinite(record.score)) {
      // The merge order compares scores: a NaN would make it depend on the algorithm.
      throw Error(fmt::format("tokenizer file '{}': piece {} has a non-finite score {}", path,
                              pieces.size(), record.score));
    }
    pieces.push_back(std::move(record.text));
    scores.push_back(record.score);
  }

  if (pieces.empty()) throw Error(fmt::format("tokenizer file '{}' holds no pieces", path));
  if (!expected_pieces) return;
  const int expected = *expected_pieces;
  if (static_cast<int>(pieces.size()) < expected) {
    throw Error(
        fmt::format("tokenizer file '{}': tokenizer has {} pieces but the model's "
                    "vocabulary is {}",
                    path, pieces.size(), expected));
  }
  if (reader.remaining() > 0) {
    // More bytes than V pieces need. If they parse as whole pieces, the tokenizer simply belongs
    // to a bigger vocabulary; otherwise it is garbage after the last piece.
    const std::size_t trailing = reader.remaining();
    std::size_t extra = 0;
    PieceStatus status;
    while ((status = read_piece(reader, max_token_length, record)) == PieceStatus::kPiece) ++extra;
    if (status == PieceStatus::kEndOfFile) {
      throw Error(
          fmt::format("tokenizer file '{}': tokenizer has {} pieces but the model's "
                      "vocabulary is {}",
                      path, static_cast<std::size_t>(expected) + extra, expected));
    }
    throw Error(fmt::format("tokenizer file '{}': {} trailing bytes after the {} pieces", path,
                            trailing, expected));
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path, int vocab_size) {
  if (vocab_size <= 0) {
    throw Error(
        fmt::format("cannot load tokenizer '{}' for a vocabulary of {} pieces", path, vocab_size));
  }
  if (GgufFile::has_magic(path)) {
    Tokenizer t = from_gguf(GgufFile::open(path));
    if (t.vocab_size() != vocab_size) {
      throw Error(
          fmt::format("tokenizer file '{}': tokenizer has {} pieces but the model's "
                      "vocabulary is {}",
                      path, t.vocab_size(), vocab_size));
    }
    return t;
  }
  Tokenizer t;
  parse_tokenizer_file(path, read_file_bytes(path), vocab_size, t.max_token_length_, t.pieces_,
                       t.scores_);
  t.build_index();
  t.set_llama2c_specials();
  return t;
}

Tokenizer Tokenizer::load(const std::string& path) {
  if (GgufFile::has_magic(path)) return from_gguf(GgufFile::open(path));
  Tokenizer t;
  parse_tokenizer_file(path, read_file_bytes(path), std::nullopt, t.max_token_length_, t.pieces_,
                       t.scores_);
  t.build_index();
  t.set_llama2c_specials();
  return t;
}

void Tokenizer::build_index() {
  index_.clear();
  index_.reserve(pieces_.size());
  // emplace keeps the first id if a piece were listed twice (the shipped files have no
  // duplicates), so lookups are deterministic.
  for (int id = 0; id < static_cast<int>(pieces_.size()); ++id) index_.emplace(pieces_[id], id);
}

void Tokenizer::set_llama2c_specials() {
  // The llama2.c format has no token types: they follow from the fixed layout (0 <unk>, 1 <s>,
  // 2 </s>, then the byte pieces).
  const int V = vocab_size();
  types_.assign(static_cast<std::size_t>(V), TokenType::normal);
  bytes_.resize(static_cast<std::size_t>(V));
  for (int id = 0; id < V; ++id) {
    if (const auto byte = parse_byte_piece(pieces_[id]); byte && id >= kFirstBytePiece) {
      types_[id] = TokenType::byte;
      bytes_[id] = std::string(1, static_cast<char>(*byte));
    } else {
      bytes_[id] = pieces_[id];
    }
  }
  if (V > kUnkToken) types_[kUnkToken] = TokenType::unknown;
  for (const int id : {kBosToken, kEosToken}) {
    if (id < V) {
      types_[id] = TokenType::control;
      bytes_[id].clear();  // markers, not text
    }
  }
  bos_ = V > kBosToken ? kBosToken : -1;
  eos_ = V > kEosToken ? kEosToken : -1;
  add_bos_ = true;
  add_space_prefix_ = true;
  end_of_generation_.assign(1, kBosToken);  // llama2.c models end a text with BOS
  specials_.clear();
  for (const int id : {kUnkToken, kBosToken, kEosToken})
    if (id < V) specials_.push_back(id);
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](int a, int b) { return pieces_[a].size() > pieces_[b].size(); });
}

// ---------------------------------------------------------------------------------------------
// GGUF vocabularies
// ---------------------------------------------------------------------------------------------

namespace {

// Pieces that end a turn in the chat formats: a model ends its answer with one of them, so a
// generation stops there even when the vocabulary does not name it as EOS or EOT.
constexpr std::array<std::string_view, 8> kEndOfTurnPieces = {
    "<|eot_id|>", "<|im_end|>",    "<|end|>",         "<end_of_turn>",
    "<|eom_id|>", "<|endoftext|>", "<|end_of_text|>", "<EOT>"};

/// The id a special-token key names, checked against the vocabulary.
int checked_special_id(int id, int fallback, int V, const char* key) {
  if (id == -1) return fallback < V ? fallback : -1;
  if (id < 0 || id >= V) {
    throw Error(fmt::format("tokenizer.ggml.{} {} is outside the vocabulary [0, {})", key, id, V));
  }
  return id;
}

}  // namespace

Tokenizer Tokenizer::from_vocabulary(const VocabularySpec& spec) {
  Tokenizer t;
  const int V = static_cast<int>(spec.tokens.size());
  if (spec.model == "llama") {
    t.kind_ = TokenizerKind::sentencepiece;
  } else if (spec.model == "gpt2") {
    t.kind_ = TokenizerKind::byte_level_bpe;
  } else {
    throw Error(fmt::format(
        "unsupported tokenizer model '{}' (tokenizer.ggml.model); supported: llama, gpt2",
        spec.model));
  }
  if (V == 0) throw Error("the vocabulary (tokenizer.ggml.tokens) holds no tokens");
  if (!spec.scores.empty() && spec.scores.size() != spec.tokens.size()) {
    throw Error(
        fmt::format("tokenizer.ggml.scores has {} entries for {} tokens", spec.scores.size(), V));
  }
  if (!spec.types.empty() && spec.types.size() != spec.tokens.size()) {
    throw Error(fmt::format("tokenizer.ggml.token_type has {} entries for {} tokens",
                            spec.types.size(), V));
  }
  t.pieces_ = spec.tokens;
  t.scores_ =
      spec.scores.empty() ? std::vector<float>(static_cast<std::size_t>(V), 0.0f) : spec.scores;
  t.types_.assign(static_cast<std::size_t>(V), TokenType::normal);
  for (int id = 0; id < V; ++id) {
    const std::string& text = t.pieces_[id];
    if (const std::size_t bad = invalid_utf8_offset(text); bad != std::string::npos) {
      throw Error(fmt::format("token {} is not valid UTF-8 (byte {}: 0x{:02X})", id, bad,
                              static_cast<unsigned char>(text[bad])));
    }
    if (!std::isfinite(t.scores_[id]))
      throw Error(fmt::format("token {} has a non-finite score {}", id, t.scores_[id]));
    if (!spec.types.empty()) {
      const std::int32_t type = spec.types[id];
      if (type < 0 || type > static_cast<std::int32_t>(TokenType::byte))
        throw Error(fmt::format("token {} has an unknown token type {}", id, type));
      t.types_[id] = static_cast<TokenType>(type);
    }
    if (text.empty()) continue;  // an empty piece can never match text: it is not indexed
    if (!t.index_.emplace(text, id).second) {
      throw Error(fmt::format("token {} '{}' appears twice in the vocabulary (first as {})", id,
                              text, t.index_.at(text)));
    }
    t.max_token_length_ = std::max(t.max_token_length_, static_cast<int>(text.size()));
  }

  // The defaults are the ones each family's converter assumes when a key is absent.
  const bool spm = t.kind_ == TokenizerKind::sentencepiece;
  t.bos_ = checked_special_id(spec.bos_id, spm ? kBosToken : -1, V, "bos_token_id");
  t.eos_ = checked_special_id(spec.eos_id, spm ? kEosToken : -1, V, "eos_token_id");
  const int eot = checked_special_id(spec.eot_id, V, V, "eot_token_id");
  const int eom = checked_special_id(spec.eom_id, V, V, "eom_token_id");
  checked_special_id(spec.unk_id, -1, V, "unknown_token_id");
  t.add_space_prefix_ = spm && spec.add_space_prefix.value_or(true);
  if (spm) {
    t.add_bos_ = spec.add_bos.value_or(true);
  } else {
    t.init_byte_level(spec);  // sets add_bos_ from the pre-tokenizer's default
    if (spec.add_bos) t.add_bos_ = *spec.add_bos;
  }
  if (t.add_bos_ && t.bos_ < 0)
    throw Error("the vocabulary asks for a BOS token (add_bos_token) but names none");

  // What each token decodes to.
  t.bytes_.resize(static_cast<std::size_t>(V));
  for (int id = 0; id < V; ++id) {
    const std::string& text = t.pieces_[id];
    switch (t.types_[id]) {
      case TokenType::user_defined:
        t.bytes_[id] = text;  // kept whole, as written
        break;
      case TokenType::byte:
        if (const auto byte = parse_byte_piece(text)) {
          t.bytes_[id] = std::string(1, static_cast<char>(*byte));
        } else {
          throw Error(fmt::format("token {} '{}' has type byte but is not <0xXX>", id, text));
        }
        break;
      case TokenType::normal:
      case TokenType::undefined:
        if (spm) {
          t.bytes_[id] = replace_all(text, kSpaceMark, " ");
        } else if (auto bytes = from_byte_level(text)) {
          t.bytes_[id] = std::move(*bytes);
        } else {
          throw Error(
              fmt::format("token {} '{}' is not byte-level text (a gpt2 vocabulary "
                          "writes every byte as one of 256 characters)",
                          id, text));
        }
        break;
      case TokenType::unknown:
      case TokenType::control:
      case TokenType::unused:
        break;  // markers and reserved slots: no text
    }
  }

  // Special tokens cut out of the text before encoding, the longest first so that a token
  // containing another wins.
  for (int id = 0; id < V; ++id) {
    const TokenType type = t.types_[id];
    if (!t.pieces_[id].empty() && (type == TokenType::control || type == TokenType::unknown ||
                                   type == TokenType::user_defined))
      t.specials_.push_back(id);
  }
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [&](int a, int b) { return t.pieces_[a].size() > t.pieces_[b].size(); });

  for (const int id : {t.eos_, eot, eom})
    if (id >= 0 && id < V) t.end_of_generation_.push_back(id);
  for (const std::string_view text : kEndOfTurnPieces)
    if (const int id = t.find(text); id >= 0) t.end_of_generation_.push_back(id);
  std::sort(t.end_of_generation_.begin(), t.end_of_generation_.end());
  t.end_of_generation_.erase(std::unique(t.end_of_generation_.begin(), t.end_of_generation_.end()),
                             t.end_of_generation_.end());
  return t;
}

Tokenizer Tokenizer::synthetic(int vocab_size) {
  // 3 special pieces + 256 byte pieces + the 95 printable ASCII characters (' ' first, which the
  // encoder needs as the dummy prefix). Anything above that is filled with merges.
  constexpr int kPrintable = 0x7E - 0x20 + 1;
  constexpr int kMinVocab = kFirstBytePiece + kNumBytePieces + kPrintable;
  if (vocab_size < kMinVocab) {
    throw Error(
        fmt::format("a synthetic tokenizer needs a vocabulary of at least {} pieces "
                    "(3 special, 256 bytes, 95 printable ASCII), got {}",
                    kMinVocab, vocab_size));
  }
  Tokenizer t;
  // Scores only matter for pieces that are the result of a merge; like SentencePiece's, they
  // decrease with the id, so the earlier (shorter) merges are applied first.
  auto add = [&t](std::string piece) {
    const float score = -static_cast<float>(t.pieces_.size());
    t.pieces_.push_back(std::move(piece));
    t.scores_.push_back(score);
  };
  add("<unk>");
  add("<s>");
  add("</s>");
  for (int b = 0; b < kNumBytePieces; ++b) add(fmt::format("<0x{:02X}>", b));
  for (int c = 0x20; c <= 0x7E; ++c) add(std::string(1, static_cast<char>(c)));

  // Merged pieces by total length n = 2, 3, ...: first " " + every lowercase word of n-1
  // letters, then every lowercase word of n letters, each in alphabetical order. Every such
  // piece is the merge of a shorter piece and one letter, so BPE can reach it.
  auto word = [](std::int64_t index, int letters) {
    std::string w(static_cast<std::size_t>(letters), 'a');
    for (int i = letters - 1; i >= 0; --i, index /= 26) w[i] = static_cast<char>('a' + index % 26);
    return w;
  };
  for (int n = 2; static_cast<int>(t.pieces_.size()) < vocab_size; ++n) {
    for (int spaced = 1; spaced >= 0; --spaced) {
      const int letters = n - spaced;
      std::int64_t count = 1;
      for (int i = 0; i < letters; ++i) count *= 26;
      for (std::int64_t k = 0; k < count && static_cast<int>(t.pieces_.size()) < vocab_size; ++k) {
        std::string piece(static_cast<std::size_t>(spaced), ' ');
        piece += word(k, letters);
        add(std::move(piece));
      }
    }
  }
  for (const std::string& p : t.pieces_) {
    t.max_token_length_ = std::max(t.max_token_length_, static_cast<int>(p.size()));
  }
  t.build_index();
  t.set_llama2c_specials();
  return t;
}

Tokenizer Tokenizer::from_gguf(const GgufFile& file) {
  try {
    VocabularySpec v;
    auto has = [&](const char* key) { return file.find(key) != nullptr; };
    auto strings = [&](const char* key) {
      std::vector<std::string> out;
      for (const std::string_view s : file.get_array<std::string_view>(key)) out.emplace_back(s);
      return out;
    };
    auto id = [&](const char* key) { return has(key) ? static_cast<int>(file.get_u32(key)) : -1; };
    v.model = file.get_string("tokenizer.ggml.model");
    if (has("tokenizer.ggml.pre")) v.pre = file.get_string("tokenizer.ggml.pre");
    v.tokens = strings("tokenizer.ggml.tokens");
    if (has("tokenizer.ggml.scores")) v.scores = file.get_array<float>("tokenizer.ggml.scores");
    if (has("tokenizer.ggml.token_type"))
      v.types = file.get_array<std::int32_t>("tokenizer.ggml.token_type");
    if (has("tokenizer.ggml.merges")) v.merges = strings("tokenizer.ggml.merges");
    v.bos_id = id("tokenizer.ggml.bos_token_id");
    v.eos_id = id("tokenizer.ggml.eos_token_id");
    v.eot_id = id("tokenizer.ggml.eot_token_id");
    v.eom_id = id("tokenizer.ggml.eom_token_id");
    v.unk_id = id("tokenizer.ggml.unknown_token_id");
    if (has("tokenizer.ggml.add_bos_token"))
      v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
    if (has("tokenizer.ggml.add_space_prefix"))
      v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
    Tokenizer t = from_vocabulary(v);
    if (has("tokenizer.chat_template"))
      t.chat_template_ = std::string(file.get_string("tokenizer.chat_template"));
    return t;
  } catch (const Error& e) {
    // The reader's own messages already name the file; the vocabulary's do not.
    const std::string what = e.what();
    if (what.find(file.path()) != std::string::npos) throw;
    throw Error(fmt::format("tokenizer in '{}': {}", file.path(), what));
  }
}

// ---------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------

const std::string& Tokenizer::piece(int id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error(fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_size()));
  }
  return pieces_[static_cast<std::size_t>(id)];
}

float Tokenizer::score(int id) const {
  piece(id);  // validates the id
  return scores_[static_cast<std::size_t>(id)];
}

TokenType Tokenizer::type(int id) const {
  piece(id);  // validates the id
  return types_[static_cast<std::size_t>(id)];
}

int Tokenizer::find(std::string_view text) const {
  const auto it = index_.find(std::string(text));
  return it == index_.end() ? -1 : it->second;
}

std::string Tokenizer::kind_name() const {
  switch (kind_) {
    case TokenizerKind::llama2c:
      return "llama2.c";
    case TokenizerKind::sentencepiece:
      return "llama";
    case TokenizerKind::byte_level_bpe:
      return "gpt2/" + pre_name_;
  }
  return "unknown";
}

bool Tokenizer::is_end_of_generation(int id) const {
  return std::binary_search(end_of_generation_.begin(), end_of_generation_.end(), id);
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

std::vector<int> Tokenizer::encode(std::string_view text, bool bos, bool eos,
                                   bool dummy_prefix) const {
  EncodeOptions options;
  options.add_bos = bos;
  options.add_eos = eos;
  options.dummy_prefix = dummy_prefix;
  return encode(text, options);
}

std::vector<int> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  // Step 1: cut the special tokens out. A fragment is either text or one special token (id).
  struct Fragment {
    std::string_view text;
    int id = -1;
  };
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({text});
  for (const int special : specials_) {
    // Control and unknown tokens are markup: only a template (parse_special) writes them.
    // User-defined ones are part of the text and always kept whole.
    if (!options.parse_special && types_[special] != TokenType::user_defined) continue;
    const std::string& needle = pieces_[special];
    std::vector<Fragment> next;
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      std::size_t from = 0;
      for (std::size_t at; (at = f.text.find(needle, from)) != std::string_view::npos;) {
        if (at > from) next.push_back({f.text.substr(from, at - from)});
        next.push_back({{}, special});
        from = at + needle.size();
      }
      if (from < f.text.size()) next.push_back({f.text.substr(from)});
    }
    fragments = std::move(next);
  }

  // Step 2: encode each text fragment.
  std::vector<int> tokens;
  tokens.reserve(text.size() + 2);
  const bool bos = options.add_bos && (kind_ == TokenizerKind::llama2c || add_bos_);
  // llama2.c prepends id 1 whatever the vocabulary (run.c does); a GGUF one names its BOS.
  if (bos) tokens.push_back(kind_ == TokenizerKind::llama2c ? kBosToken : bos_);
  bool after_special = true;  // SentencePiece adds its dummy prefix at the start of the text
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      tokens.push_back(f.id);
      after_special = true;
      continue;
    }
    if (kind_ == TokenizerKind::byte_level_bpe) {
      encode_byte_level(f.text, tokens);
    } else {
      encode_sentencepiece(f.text, options.dummy_prefix && after_special, tokens);
    }
    after_special = false;
  }
  if (options.add_eos && eos_ >= 0) tokens.push_back(eos_);
  return tokens;
}

void Tokenizer::encode_sentencepiece(std::string_view text, bool dummy_prefix,
                                     std::vector<int>& out) const {
  // SentencePiece's add_dummy_prefix: "Hello" is encoded as " Hello", so a word at the start
  // gets the same pieces as the same word after a space. GGUF vocabularies write the space as
  // U+2581; llama2.c's tokenizer.bin keeps it as ' '.
  const bool llama2c = kind_ == TokenizerKind::llama2c;
  std::string escaped;
  if (dummy_prefix && add_space_prefix_ && !text.empty()) escaped += ' ';
  const std::size_t prefix_chars = escaped.size();  // the dummy prefix: a symbol of its own
  escaped += text;
  if (!llama2c) escaped = replace_all(escaped, " ", kSpaceMark);
  const std::size_t prefix_bytes =
      prefix_chars == 0 ? std::size_t{0} : llama2c ? std::size_t{1} : kSpaceMark.size();

  // One symbol per code point: a leading byte and the continuation bytes after it, at most 4
  // bytes in all (a stray continuation byte starts a group of its own, as run.c groups them).
  // llama2.c falls back to byte pieces before merging (as run.c does); a GGUF vocabulary only
  // for what is left unmerged (as SentencePiece does), which can differ when two code points
  // absent from the vocabulary merge into a piece.
  std::vector<std::string> symbols;
  std::vector<int> ids;  // a symbol's id when it is known before any merge, else -1
  for (std::size_t i = 0; i < escaped.size();) {
    // The prefix is added before the text, as run.c adds it: a stray continuation byte at the
    // start of the text is not part of it.
    std::size_t len = i == 0 && prefix_bytes > 0 ? prefix_bytes : 1;
    while (i >= prefix_bytes && i + len < escaped.size() && len < 4 &&
           utf8_is_continuation(static_cast<unsigned char>(escaped[i + len]))) {
      ++len;
    }
    std::string code_point = escaped.substr(i, len);
    i += len;
    if (!llama2c || find(code_point) >= 0) {
      symbols.push_back(std::move(code_point));
      ids.push_back(-1);
      continue;
    }
    for (const char c : code_point) {
      const int id = kFirstBytePiece + static_cast<unsigned char>(c);
      if (id >= vocab_size()) {
        throw Error(
            fmt::format("cannot encode byte 0x{:02X}: the vocabulary ({} pieces) has no "
                        "byte pieces to fall back on",
                        static_cast<unsigned char>(c), vocab_size()));
      }
      symbols.push_back(pieces_[id]);
      ids.push_back(id);  // a byte piece is its id, whatever other piece spells the same text
    }
  }

  // BPE: merge the adjacent pair whose concatenation is the piece with the highest score. In a
  // GGUF vocabulary only text pieces are merge targets (not markup, not byte pieces).
  std::string pair;
  merge_symbols(symbols, [&](std::string_view left, std::string_view right) {
    pair.assign(left);
    pair += right;
    const int id = find(pair);
    std::optional<double> priority;
    if (id >= 0 && (llama2c || types_[id] == TokenType::normal ||
                    types_[id] == TokenType::user_defined || types_[id] == TokenType::undefined))
      priority = scores_[static_cast<std::size_t>(id)];
    return priority;
  }, &ids);
  for (std::size_t s = 0; s < symbols.size(); ++s) {
    const std::string& symbol = symbols[s];
    if (const int id = ids[s] >= 0 ? ids[s] : find(symbol); id >= 0) {
      out.push_back(id);
      continue;
    }
    // A code point the vocabulary lacks: its UTF-8 bytes as byte pieces.
    for (const char c : symbol) {
      const int id = find(fmt::format("<0x{:02X}>", static_cast<unsigned char>(c)));
      if (id < 0) {
        throw Error(
            fmt::format("cannot encode byte 0x{:02X}: the vocabulary has no byte piece "
                        "<0x{:02X}> to fall back on",
                        static_cast<unsigned char>(c), static_cast<unsigned char>(c)));
      }
      out.push_back(id);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

std::string Tokenizer::decode_piece(int prev_token, int token) const {
  if (prev_token != -1 && (prev_token < 0 || prev_token >= vocab_size())) {
    throw Error(fmt::format("previous token id {} is outside the vocabulary [0, {})", prev_token,
                            vocab_size()));
  }
  piece(token);  // throws on a bad id
  std::string_view text = bytes_[static_cast<std::size_t>(token)];
  // The dummy prefix the encoder added: SentencePiece's decoder strips the leading space of
  // the first piece of the text. llama2.c: the one right after BOS; GGUF: at the start or
  // after markup (where the encoder added it).
  bool first = false;
  if (kind_ == TokenizerKind::llama2c) {
    first = prev_token == kBosToken;
  } else if (kind_ == TokenizerKind::sentencepiece) {
    first = add_space_prefix_ && (prev_token == -1 || types_[prev_token] == TokenType::control);
  }
  if (first && !text.empty() && text.front() == ' ') text.remove_prefix(1);
  return std::string(text);
}

std::string Tokenizer::decode(const std::vector<int>& tokens) const {
  std::string out;
  int prev = -1;
  for (const int token : tokens) {
    out += decode_piece(prev, token);
    prev = token;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// StreamDecoder
// ---------------------------------------------------------------------------------------------

std::string StreamDecoder::push(int prev_token, int token) {
  const std::string bytes = tokenizer_->decode_piece(prev_token, token);
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (!pending_.empty()) {
      const auto lead = static_cast<unsigned char>(pending_[0]);
      if (utf8_continues(lead, pending_.size(), b)) {
        pending_ += c;
        if (pending_.size() == static_cast<std::size_t>(utf8_sequence_length(lead))) {
          out += pending_;
          pending_.clear();
        }
        continue;
      }
      // The held sequence broke off before completing: its bytes can never form a character,
      // so drop them, and read this byte afresh.
      pending_.clear();
    }
    const int length = utf8_sequence_length(b);
    if (length == 1) {
      if (is_printable_ascii(b)) out += c;  // control bytes other than whitespace are dropped
    } else if (length > 1) {
      pending_ += c;  // the lead byte of a multi-byte character: wait for the rest
    }
    // length == 0: a byte that cannot start a character (stray continuation, C0, F5..FF).
  }
  return out;
}

std::string StreamDecoder::flush() {
  // Whatever is held is an incomplete sequence (complete ones are emitted at once), so it is
  // not valid UTF-8 and is dropped, as printing it would show a replacement character.
  pending_.clear();
  return {};
}

std::string stream_text(const Tokenizer& tokenizer, const std::vector<int>& tokens,
                        std::size_t first_generated) {
  StreamDecoder printer(tokenizer);
  std::string text;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    if (i >= first_generated && tokenizer.is_end_of_generation(tokens[i])) break;
    text += printer.push(tokens[i - 1], tokens[i]);
  }
  return text + printer.flush();
}

}  // namespace inferlab
