#pragma once
/// @file text_stream.hpp
/// @brief The text a server streams for one generated sequence: tokens become UTF-8 text as
/// they come (an incomplete character is held back until its last byte arrives), and text that
/// could be the start of a stop string is held back until it is known not to be one. A stop
/// string is caught even when its characters arrive split over several tokens, and it is never
/// sent: the text ends just before it.

#include <string>
#include <vector>

#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief Incremental detokenization with stop strings, one per generated sequence.
class TextStream {
 public:
  /// @param tokenizer decodes the tokens (must outlive the stream)
  /// @param stop the stop strings (empty ones are ignored)
  /// @param last_prompt_token the prompt's last token (a piece's text can depend on the one
  ///        before it), or -1
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop, int last_prompt_token);

  /// @brief Feeds one generated token; returns the text that is safe to send now (possibly "").
  /// After a stop string was found, returns "" for every later token.
  std::string push(int token);

  /// @brief The end of the sequence: returns what was held back (a stop-string prefix that
  /// never completed, and any complete character the decoder still held).
  std::string finish();

  /// @brief True once a stop string has been found (the sequence should stop).
  bool stopped() const { return stopped_; }

 private:
  /// Sends what cannot start a stop string; holds the rest.
  std::string release(bool at_end);

  StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string held_;  // decoded, not yet sent
  int prev_ = -1;
  bool stopped_ = false;
};

/// @brief The length of the longest suffix of @p text that is a proper prefix of one of
/// @p stop: the bytes that must be held back because a later token could complete a stop string.
std::size_t stop_prefix_overlap(const std::string& text, const std::vector<std::string>& stop);

}  // namespace inferlab
