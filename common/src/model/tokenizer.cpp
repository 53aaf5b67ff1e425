/// @file tokenizer.cpp
/// @brief The llama2.c tokenizer: loading `tokenizer.bin`, BPE encoding by merge score with byte
/// fallback, decoding pieces, and a UTF-8-safe stream decoder for printing.
///
/// The encoder follows karpathy/llama2.c `run.c` step by step; on the texts in the golden file it
/// gives exactly the ids SentencePiece gives. Two data structures differ: run.c sorts the
/// vocabulary and binary-searches it, we keep a hash map from piece to id; and run.c rescans every
/// pair after each merge (quadratic), we keep the pairs in a priority queue (n log n).
#include "inferlab/model/tokenizer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <queue>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/base/utf8.hpp"

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
  Tokenizer t;
  parse_tokenizer_file(path, read_file_bytes(path), vocab_size, t.max_token_length_, t.pieces_,
                       t.scores_);
  t.build_index();
  return t;
}

Tokenizer Tokenizer::load(const std::string& path) {
  Tokenizer t;
  parse_tokenizer_file(path, read_file_bytes(path), std::nullopt, t.max_token_length_, t.pieces_,
                       t.scores_);
  t.build_index();
  return t;
}

void Tokenizer::build_index() {
  index_.clear();
  index_.reserve(pieces_.size());
  // emplace keeps the first id if a piece were listed twice (the shipped files have no
  // duplicates), so lookups are deterministic.
  for (int id = 0; id < static_cast<int>(pieces_.size()); ++id) index_.emplace(pieces_[id], id);
}

// ---------------------------------------------------------------------------------------------
// The synthetic tokenizer
// ---------------------------------------------------------------------------------------------

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
  return t;
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

int Tokenizer::find(std::string_view text) const {
  const auto it = index_.find(std::string(text));
  return it == index_.end() ? -1 : it->second;
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

std::vector<int> Tokenizer::encode(std::string_view text, bool bos, bool eos,
                                   bool dummy_prefix) const {
  // Step 1: one symbol per code point. A code point that is not a piece of its own falls back
  // to its UTF-8 bytes, one byte piece each, so no text is ever unrepresentable.
  std::vector<int> symbols;
  auto add_code_point = [&](std::string_view code_point) {
    if (const int id = find(code_point); id >= 0) {
      symbols.push_back(id);
      return;
    }
    for (const char c : code_point) {
      const int id = kFirstBytePiece + static_cast<unsigned char>(c);
      if (id >= vocab_size()) {
        throw Error(
            fmt::format("cannot encode byte 0x{:02X}: the vocabulary ({} pieces) has no "
                        "byte pieces to fall back on",
                        static_cast<unsigned char>(c), vocab_size()));
      }
      symbols.push_back(id);
    }
  };
  // SentencePiece's add_dummy_prefix: "Hello" is encoded as " Hello", so a word at the start
  // gets the same pieces as the same word after a space.
  if (dummy_prefix && !text.empty()) add_code_point(" ");
  for (std::size_t i = 0; i < text.size();) {
    // A code point: a leading byte and the continuation bytes after it, at most 4 bytes in all.
    // (A stray continuation byte starts a group of its own, exactly as run.c groups them.)
    std::size_t len = 1;
    while (i + len < text.size() && len < 4 &&
           utf8_is_continuation(static_cast<unsigned char>(text[i + len]))) {
      ++len;
    }
    add_code_point(text.substr(i, len));
    i += len;
  }

  // Step 2: BPE. Repeatedly merge the adjacent pair whose concatenation is the piece with the
  // highest score (the leftmost pair on a tie), until no adjacent pair forms a piece.
  // run.c rescans every pair after each merge, O(n^2) lookups for n symbols (37 s for a
  // 90,000-character prompt). Here, as in production tokenizers, the symbols form a linked list
  // and every pair that forms a piece waits in a priority queue, best score first, then
  // leftmost: a merge only creates the two pairs around the new symbol, and a queued pair whose
  // symbols changed since it was queued is skipped when it comes out (lazy invalidation).
  // O(n log n), and the same merges in the same order, so the same ids.
  const int n = static_cast<int>(symbols.size());
  std::vector<int> next(static_cast<std::size_t>(n)), prev(static_cast<std::size_t>(n));
  std::vector<unsigned> version(static_cast<std::size_t>(n), 0);  // bumped on every change
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    float score;
    int left, right;  // symbol indices; a symbol keeps its index (its position order) when merged
    int id;           // the merged piece
    unsigned left_version, right_version;
  };
  // std::priority_queue pops the largest: the higher score, then the smaller (leftmost) index.
  auto lower_priority = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower_priority)> queue(
      lower_priority);
  std::string pair;
  auto queue_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    pair = pieces_[static_cast<std::size_t>(symbols[left])];
    pair += pieces_[static_cast<std::size_t>(symbols[right])];
    const auto it = index_.find(pair);
    if (it == index_.end()) return;
    queue.push({scores_[static_cast<std::size_t>(it->second)], left, right, it->second,
                version[left], version[right]});
  };
  for (int i = 0; i + 1 < n; ++i) queue_pair(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    // Unchanged versions mean both symbols are as queued and still adjacent: the right one can
    // only leave the list by merging into the left one, which changes both.
    if (version[c.left] != c.left_version || version[c.right] != c.right_version) continue;
    symbols[c.left] = c.id;
    ++version[c.left];
    ++version[c.right];  // removed from the list
    next[c.left] = next[c.right];
    if (next[c.right] >= 0) prev[next[c.right]] = c.left;
    queue_pair(prev[c.left], c.left);
    queue_pair(c.left, next[c.left]);
  }

  // BOS is added outside the merge loop: run.c merges over it too, but no piece starts with
  // "\n<s>\n", so the result is the same.
  std::vector<int> tokens;
  tokens.reserve(symbols.size() + 2);
  if (bos) tokens.push_back(kBosToken);
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) tokens.push_back(symbols[i]);
  if (eos) tokens.push_back(kEosToken);
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

std::string Tokenizer::decode_piece(int prev_token, int token) const {
  if (prev_token != -1 && (prev_token < 0 || prev_token >= vocab_size())) {
    throw Error(fmt::format("previous token id {} is outside the vocabulary [0, {})", prev_token,
                            vocab_size()));
  }
  std::string_view text = piece(token);  // throws on a bad id
  if (token == kBosToken || token == kEosToken) return {};
  // The dummy prefix the encoder added: SentencePiece's decoder strips the leading space of
  // the first piece of the text, which is the one right after BOS.
  if (prev_token == kBosToken && !text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (const auto byte = parse_byte_piece(text)) return std::string(1, static_cast<char>(*byte));
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

}  // namespace inferlab
