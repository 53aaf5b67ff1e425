// Exercise 15, the answer: the SSE events of a token stream, with UTF-8 holdback and stop
// strings (the core's version is inferlab::TextStream, serving/text_stream.hpp).

#include <algorithm>

#include <nlohmann/json.hpp>

#include "exercise.hpp"

namespace inferlab::ex15 {

namespace {

// The length of the longest prefix of @p bytes that ends on a character boundary: an
// incomplete last character (its lead byte announces more bytes than follow) is cut off.
std::size_t complete_prefix(const std::string& bytes) {
  // A character is at most 4 bytes: look back at most 3 for the last lead byte.
  for (std::size_t back = 1; back <= std::min<std::size_t>(4, bytes.size()); ++back) {
    const auto c = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const std::size_t need = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return back >= need ? bytes.size() : bytes.size() - back;
  }
  return bytes.size();
}

// The longest end of @p text that is a proper beginning of a stop string.
std::size_t stop_overlap(const std::string& text, const std::vector<std::string>& stop) {
  std::size_t best = 0;
  for (const std::string& s : stop)
    for (std::size_t k = std::min(s.size() - 1, text.size()); k > best; --k)
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        best = k;
        break;
      }
  return best;
}

std::string text_event(const std::string& text) {
  return "data: " + nlohmann::json{{"text", text}}.dump() + "\n\n";
}

std::string finish_event(const char* reason) {
  return "data: " + nlohmann::json{{"finish_reason", reason}}.dump() + "\n\n";
}

}  // namespace

std::vector<std::string> sse_stream(const std::vector<std::string>& pieces,
                                    const std::vector<std::string>& stop) {
  std::vector<std::string> events;
  std::string pending;  // bytes of an incomplete character
  std::string held;     // complete text not sent yet
  for (const std::string& piece : pieces) {
    pending += piece;
    const std::size_t complete = complete_prefix(pending);
    held += pending.substr(0, complete);
    pending.erase(0, complete);
    std::size_t first = std::string::npos;
    for (const std::string& s : stop) first = std::min(first, held.find(s));
    if (first != std::string::npos) {
      if (first > 0) events.push_back(text_event(held.substr(0, first)));
      events.push_back(finish_event("stop"));
      events.push_back("data: [DONE]\n\n");
      return events;
    }
    const std::size_t ready = held.size() - stop_overlap(held, stop);
    if (ready > 0) {
      events.push_back(text_event(held.substr(0, ready)));
      held.erase(0, ready);
    }
  }
  if (!held.empty()) events.push_back(text_event(held));
  events.push_back(finish_event("length"));
  events.push_back("data: [DONE]\n\n");
  return events;
}

}  // namespace inferlab::ex15
