#pragma once
/// @file tokenizer.hpp
/// @brief SentencePiece-compatible BPE tokenizer in the llama2.c `tokenizer.bin` format.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inferlab {

/// @name Special token ids of the Llama 2 family (and of tok512)
/// @{

/// @brief Unknown piece (id 0).
inline constexpr int kUnkToken = 0;
/// @brief Beginning of sequence: prepended by encode() when bos is true. The llama2.c models
/// also emit it as their end-of-text signal, so generation stops when it is sampled.
inline constexpr int kBosToken = 1;
/// @brief End of sequence: appended by encode() when eos is true; decodes to no text.
inline constexpr int kEosToken = 2;
/// @}

/// @brief A BPE tokenizer: pieces with scores, merged greedily by score, with byte fallback.
///
/// File format (`tokenizer.bin`, little-endian): int32 max_token_length, then for each of the
/// vocab_size pieces: float32 score, int32 length, `length` bytes (no terminator). Piece i is
/// token id i; ids 3..258 are the byte pieces `<0x00>`..`<0xFF>`.
class Tokenizer {
 public:
  /// @brief Loads @p path expecting exactly @p vocab_size pieces (the model's V).
  /// @throws inferlab::Error if the file is missing, truncated, has a negative or oversized
  /// piece length, trailing bytes, or a piece count other than @p vocab_size.
  static Tokenizer load(const std::string& path, int vocab_size);

  /// @brief Loads @p path taking every piece it holds (the format stores no count, so the
  /// pieces are read until the end of the file). For tools that have a tokenizer but no model.
  /// @throws inferlab::Error if the file is missing, empty, truncated or has a bad piece length.
  static Tokenizer load(const std::string& path);

  /// @brief A tokenizer needing no file, for synthetic models: the 3 special pieces, the 256
  /// byte pieces, then printable ASCII characters and frequent letter pairs up to @p vocab_size.
  static Tokenizer synthetic(int vocab_size);

  /// @brief Encodes UTF-8 @p text: a dummy-prefix space is added to non-empty text, each
  /// code point becomes its piece (or its UTF-8 bytes as byte pieces when absent), then the
  /// adjacent pair whose merge has the highest score is merged until none is in the vocabulary.
  /// @note O(n log n) for n code points: the candidate pairs wait in a priority queue.
  /// @p dummy_prefix false skips the leading space (MaskBench tokenizes JSON that way).
  std::vector<int> encode(std::string_view text, bool bos = true, bool eos = false,
                          bool dummy_prefix = true) const;

  /// @brief The bytes token @p token contributes after @p prev_token, as llama2.c decodes:
  /// the leading space of the first piece after BOS is dropped, `<0xXX>` becomes that byte.
  /// BOS and EOS are markers, not text, and contribute nothing (as in SentencePiece; llama2.c
  /// never prints BOS because generation stops there). @p prev_token may be -1: no previous.
  /// @throws inferlab::Error if either id is outside [0, vocab_size).
  std::string decode_piece(int prev_token, int token) const;

  /// @brief Decodes a whole sequence (the first id is treated as following nothing). Bytes are
  /// returned as they are; use StreamDecoder for printing.
  std::string decode(const std::vector<int>& tokens) const;

  /// @brief Number of pieces (V); ids are in [0, V).
  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const;  ///< raw piece text (throws on a bad id)
  float score(int id) const;               ///< merge score (throws on a bad id)
  /// @brief Exact id of a piece, or -1.
  int find(std::string_view piece) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int> index_;
  int max_token_length_ = 0;
  void build_index();
};

/// @brief Turns a stream of tokens into printable text without ever emitting half a UTF-8
/// character: bytes of an incomplete multi-byte sequence are held until it completes, and
/// invalid bytes are dropped (as the reference's safe_printf drops unprintable raw bytes).
/// Control bytes other than whitespace are dropped too.
class StreamDecoder {
 public:
  /// @brief Decodes with @p tokenizer, which must outlive this decoder (it is not copied).
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  /// @brief Feeds one token (following @p prev_token); returns the text now complete.
  std::string push(int prev_token, int token);
  /// @brief Returns whatever is held back at the end (dropped if it is not valid UTF-8).
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace inferlab
