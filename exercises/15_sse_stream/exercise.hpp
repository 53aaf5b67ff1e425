#pragma once
/// @file exercises/15_sse_stream/exercise.hpp
/// @brief Exercise 15: the server-sent events of one streamed answer: text sent as soon as it
/// is safe, never half a UTF-8 character, never any part of a stop string.
///
/// A model's tokens decode to byte strings ("pieces") that need not end on a character
/// boundary: "é" is C3 A9, and a byte-fallback vocabulary writes it as two tokens. A stop
/// string can also arrive split over several tokens. The events, in order:
///
///  - after each piece, at most one `data: {"text":"..."}\n\n` event carrying all the text that
///    became safe to send (none when there is none): the bytes that end in a complete UTF-8
///    character and that cannot be the beginning of a stop string;
///  - when a stop string appears in the text: the text before its first occurrence (if any is
///    still unsent) in one event, then `data: {"finish_reason":"stop"}\n\n`; later pieces are
///    ignored;
///  - when the pieces end without a stop string: everything held back that is complete UTF-8 in
///    one event (if any; an incomplete character at the very end is dropped), then
///    `data: {"finish_reason":"length"}\n\n`;
///  - last, `data: [DONE]\n\n`.
///
/// The JSON of each event is nlohmann::json's compact dump ({"text": t}.dump()).

#include <string>
#include <vector>

namespace inferlab::ex15 {

/// @brief The SSE events of the token stream @p pieces with the stop strings @p stop
/// (non-empty strings).
/// @param pieces each token's bytes, in order
/// @param stop the stop strings
/// @return the events, each `data: ...\n\n`, the last `data: [DONE]\n\n`
std::vector<std::string> sse_stream(const std::vector<std::string>& pieces,
                                    const std::vector<std::string>& stop);

}  // namespace inferlab::ex15
