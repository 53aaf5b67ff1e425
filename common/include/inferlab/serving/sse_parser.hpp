#pragma once
/// @file sse_parser.hpp
/// @brief The client side of Server-Sent Events (the HTML standard's `text/event-stream`): the
/// byte stream a streaming OpenAI-compatible server sends, cut into events however the network
/// splits it.
///
/// A stream is lines ended by "\n", "\r\n" or "\r". A line "field: value" adds to the event being
/// built (one space after the colon is dropped; "data" lines join with "\n"), a line starting
/// with ':' is a comment (servers send them as keep-alives), and an empty line dispatches the
/// event. An OpenAI server sends one `data: {json}` event per chunk and `data: [DONE]` last.

#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

/// @brief One dispatched event.
struct SseEvent {
  std::string event;  ///< the "event" field ("" when the server names none: a "message")
  std::string data;   ///< the "data" lines joined with "\n"
};

/// @brief Incremental SSE parser: feed() it bytes as they arrive, in pieces of any size (one
/// byte, half a line, several events), and it returns each event once its blank line is in.
class SseParser {
 public:
  /// @brief Parses @p bytes after everything fed before.
  /// @param bytes the next bytes of the stream (any split, any length)
  /// @return the events completed by these bytes, in order (an event without a data line is
  /// dropped, as the standard says)
  std::vector<SseEvent> feed(std::string_view bytes);

  /// @brief Bytes received but not yet part of a dispatched event (an unfinished line or an
  /// event still missing its blank line); at the end of a stream, non-zero means it was cut.
  std::size_t pending_bytes() const { return line_.size() + data_.size() + event_.size(); }

 private:
  void take_line(std::vector<SseEvent>& out);

  std::string line_;        // the current line, without its end
  bool after_cr_ = false;   // the last byte was "\r": a "\n" next belongs to the same line end
  std::string data_;        // the event's data so far
  std::string event_;       // the event's name so far
  bool has_data_ = false;   // a data line was seen (data "" is then still an event)
};

}  // namespace inferlab
