#pragma once
/// @file tokenizer.hpp
/// @brief Tokenizers: SentencePiece BPE (llama2.c `tokenizer.bin`, GGUF `llama`) and byte-level
/// BPE (GGUF `gpt2`), with special tokens, BOS/EOS and end-of-generation ids, and a UTF-8-safe
/// stream decoder.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inferlab/model/pre_tokenizer.hpp"

namespace inferlab {

class GgufFile;

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

/// @brief What a token is, as GGUF's `tokenizer.ggml.token_type` says (SentencePiece's kinds).
enum class TokenType : std::int32_t {
  undefined = 0,     ///< no type given
  normal = 1,        ///< ordinary text
  unknown = 2,       ///< the unknown piece (`<unk>`): decodes to nothing
  control = 3,       ///< markup such as BOS, EOS, `<|im_start|>`: decodes to nothing, and is
                     ///< one token in a prompt only when special text is parsed
  user_defined = 4,  ///< text the vocabulary always keeps whole (never split or merged into)
  unused = 5,        ///< a reserved slot: decodes to nothing
  byte = 6,          ///< SentencePiece's byte fallback `<0xXX>`: decodes to that byte
};

/// @brief The tokenizer algorithms.
enum class TokenizerKind {
  llama2c,         ///< SentencePiece BPE from a llama2.c `tokenizer.bin` (spaces as ' ')
  sentencepiece,   ///< GGUF `llama`: SentencePiece BPE by score, spaces as U+2581, byte pieces
  byte_level_bpe,  ///< GGUF `gpt2`: pre-tokenizer split, then BPE by merge rank over bytes
};

/// @brief A vocabulary as a GGUF file describes it (the `tokenizer.ggml.*` keys), before
/// Tokenizer::from_vocabulary() checks it and builds the tables.
struct VocabularySpec {
  std::string model;                ///< `tokenizer.ggml.model`: "llama" or "gpt2"
  std::string pre;                  ///< `tokenizer.ggml.pre`: the pre-tokenizer (gpt2 only)
  std::vector<std::string> tokens;  ///< (V) `tokenizer.ggml.tokens`: the text of each id
  std::vector<float> scores;        ///< (V) `tokenizer.ggml.scores`, or empty (all 0)
  std::vector<std::int32_t> types;  ///< (V) `tokenizer.ggml.token_type`, or empty (all normal)
  /// `tokenizer.ggml.merges`: "left right" pairs, the earliest merged first (gpt2 only)
  std::vector<std::string> merges;
  int bos_id = -1;              ///< `tokenizer.ggml.bos_token_id` (-1: the model's default)
  int eos_id = -1;              ///< `tokenizer.ggml.eos_token_id` (-1: the model's default)
  int eot_id = -1;              ///< `tokenizer.ggml.eot_token_id` (-1: none)
  int eom_id = -1;              ///< `tokenizer.ggml.eom_token_id` (-1: none)
  int unk_id = -1;              ///< `tokenizer.ggml.unknown_token_id` (-1: the model's default)
  std::optional<bool> add_bos;  ///< `tokenizer.ggml.add_bos_token`
  std::optional<bool> add_space_prefix;  ///< `tokenizer.ggml.add_space_prefix` (llama only)
};

/// @brief How encode() turns a text into ids.
struct EncodeOptions {
  /// Prepend BOS: always for a llama2.c tokenizer; for a GGUF one, when its vocabulary asks for
  /// it (`add_bos_token`: Llama 2 and 3 do, SmolLM2 and Qwen2 do not).
  bool add_bos = true;
  bool add_eos = false;  ///< append EOS
  /// Special-token text (`<|im_start|>`, `<s>`) becomes its one token, as a chat template
  /// means it; when false it is tokenized as the plain text a user typed.
  bool parse_special = false;
  /// SentencePiece's dummy prefix: a space before the text (MaskBench tokenizes JSON without).
  bool dummy_prefix = true;
};

/// @brief A tokenizer: text to token ids and back. Three algorithms (TokenizerKind) behind one
/// interface, so a chapter does not care which one its model uses.
///
/// llama2.c file format (`tokenizer.bin`, little-endian): int32 max_token_length, then for each
/// of the vocab_size pieces: float32 score, int32 length, `length` bytes (no terminator). Piece i
/// is token id i; ids 3..258 are the byte pieces `<0x00>`..`<0xFF>`.
class Tokenizer {
 public:
  /// @brief Loads @p path expecting exactly @p vocab_size pieces (the model's V): a llama2.c
  /// `tokenizer.bin` or a GGUF file (told apart by the file's magic, not its name).
  /// @throws inferlab::Error if the file is missing, truncated, has a negative or oversized
  /// piece length, trailing bytes, or a piece count other than @p vocab_size.
  static Tokenizer load(const std::string& path, int vocab_size);

  /// @brief Loads @p path taking every piece it holds (a GGUF file, or a llama2.c file, whose
  /// format stores no count, so the pieces are read until the end of the file). For tools that
  /// have a tokenizer but no model.
  /// @throws inferlab::Error if the file is missing, empty, truncated or has a bad piece length.
  static Tokenizer load(const std::string& path);

  /// @brief A tokenizer needing no file, for synthetic models: the 3 special pieces, the 256
  /// byte pieces, then printable ASCII characters and frequent letter pairs up to @p vocab_size.
  static Tokenizer synthetic(int vocab_size);

  /// @brief The tokenizer a GGUF file describes (its `tokenizer.ggml.*` keys and
  /// `tokenizer.chat_template`): a model file or a vocabulary-only file.
  /// @throws inferlab::Error naming the file and the problem (a missing key, a bad vocabulary
  /// as from_vocabulary() says).
  static Tokenizer from_gguf(const GgufFile& file);

  /// @brief Builds a tokenizer from a GGUF-style vocabulary (`llama` or `gpt2`).
  /// @throws inferlab::Error naming the problem: an unknown model or pre-tokenizer (with the
  /// supported names), array lengths that disagree, a token that is not valid UTF-8 or appears
  /// twice, a merge naming an unknown token, a special id outside the vocabulary.
  static Tokenizer from_vocabulary(const VocabularySpec& spec);

  /// @brief Encodes UTF-8 @p text as @p options say.
  ///
  /// First the special tokens are cut out of the text (user-defined ones always, control ones
  /// when `parse_special`). Each remaining fragment is encoded by the kind's algorithm:
  /// - SentencePiece (llama2.c and `llama`): a dummy-prefix space is added, each code point
  ///   becomes its piece (or its UTF-8 bytes as byte pieces when absent), then the adjacent pair
  ///   whose merge has the highest score is merged until none is in the vocabulary.
  /// - byte-level BPE (`gpt2`): the pre-tokenizer cuts the fragment into words; each word's
  ///   bytes are written as byte_level_chars() and merged by rank (the earliest merge first).
  /// @note O(n log n) for n code points: the candidate pairs wait in a priority queue.
  std::vector<int> encode(std::string_view text, const EncodeOptions& options) const;

  /// @brief encode() with @p bos, @p eos and @p dummy_prefix as EncodeOptions and no special-
  /// token parsing.
  std::vector<int> encode(std::string_view text, bool bos = true, bool eos = false,
                          bool dummy_prefix = true) const;

  /// @brief The bytes token @p token contributes after @p prev_token. llama2.c: the leading
  /// space of the first piece after BOS is dropped, `<0xXX>` becomes that byte, BOS and EOS are
  /// markers, not text, and contribute nothing. GGUF SentencePiece: U+2581 is a space, and the
  /// dummy-prefix space is dropped at the start of the text (@p prev_token -1 or a control
  /// token). Byte-level BPE: the bytes the piece's characters stand for. Control, unknown and
  /// unused tokens of a GGUF vocabulary contribute nothing. @p prev_token may be -1: no previous.
  /// @throws inferlab::Error if either id is outside [0, vocab_size).
  std::string decode_piece(int prev_token, int token) const;

  /// @brief Decodes a whole sequence (the first id is treated as following nothing). Bytes are
  /// returned as they are; use StreamDecoder for printing.
  std::string decode(const std::vector<int>& tokens) const;

  /// @brief Number of pieces (V); ids are in [0, V).
  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const;  ///< raw piece text (throws on a bad id)
  float score(int id) const;               ///< merge score (throws on a bad id)
  TokenType type(int id) const;            ///< the token's type (throws on a bad id)
  /// @brief Exact id of a piece, or -1.
  int find(std::string_view piece) const;

  /// @brief The algorithm.
  TokenizerKind kind() const { return kind_; }
  /// @brief "llama2.c", "llama" or "gpt2", with the pre-tokenizer for gpt2 ("gpt2/smollm").
  std::string kind_name() const;
  /// @brief The beginning-of-sequence id, or -1 if the vocabulary has none.
  int bos_id() const { return bos_; }
  /// @brief The end-of-sequence id, or -1 if the vocabulary has none.
  int eos_id() const { return eos_; }
  /// @brief Whether encode() with `add_bos` prepends BOS.
  bool adds_bos() const { return add_bos_; }
  /// @brief Whether sampling @p id ends a generation: BOS for llama2.c (its models emit it as
  /// end-of-text); for GGUF, EOS, EOT, EOM and the end-of-turn markers of the chat formats
  /// (`<|im_end|>`, `<|eot_id|>`, `<|end|>`, `<end_of_turn>`, ...).
  bool is_end_of_generation(int id) const;
  /// @brief The model's chat template as Jinja source (`tokenizer.chat_template`; "" if none).
  const std::string& chat_template() const { return chat_template_; }
  /// @brief The ids is_end_of_generation() accepts, ascending.
  const std::vector<int>& end_of_generation_ids() const { return end_of_generation_; }

 private:
  TokenizerKind kind_ = TokenizerKind::llama2c;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::string> bytes_;  // what each token decodes to (before any space rule)
  std::vector<int> specials_;       // ids cut out before encoding, longest text first
  std::vector<int> end_of_generation_;
  int max_token_length_ = 0;
  int bos_ = -1, eos_ = -1;
  bool add_bos_ = true;
  bool add_space_prefix_ = true;
  // Byte-level BPE: the pre-tokenizer, each merge's rank keyed by its "left right" line, and
  // whether a word that is already a token skips the merges (Llama 3).
  std::string pre_name_;
  std::optional<PreTokenizer> pre_;
  std::unordered_map<std::string, int> merge_ranks_;
  bool ignore_merges_ = false;
  std::string chat_template_;

  void build_index();
  void set_llama2c_specials();
  void encode_sentencepiece(std::string_view text, bool dummy_prefix, std::vector<int>& out) const;
  void encode_byte_level(std::string_view text, std::vector<int>& out) const;
  void init_byte_level(const VocabularySpec& spec);
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

/// @brief The text of a finished sequence, as a StreamDecoder prints it token by token: every
/// token after the first (the BOS, or the prompt's first token), up to (not including) the
/// first end-of-generation token (Tokenizer::is_end_of_generation(): BOS in llama2.c models) at
/// or after @p first_generated, which the stopping rule (generation_stop()) keeps as the last
/// token.
/// @param tokenizer the sequence's tokenizer
/// @param tokens prompt then generated tokens
/// @param first_generated index of the first generated token (the prompt's length)
/// @return the prompt's text after its first token, then the generated text
std::string stream_text(const Tokenizer& tokenizer, const std::vector<int>& tokens,
                        std::size_t first_generated);

}  // namespace inferlab
