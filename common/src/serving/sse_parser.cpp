/// @file sse_parser.cpp
/// @brief Server-Sent Events, client side: line splitting that survives any network split.

#include "inferlab/serving/sse_parser.hpp"

namespace inferlab {

std::vector<SseEvent> SseParser::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  for (const char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" is one line end, even when split across two feeds
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      take_line(out);
    } else {
      line_ += c;
    }
  }
  return out;
}

void SseParser::take_line(std::vector<SseEvent>& out) {
  if (line_.empty()) {  // blank line: dispatch
    if (has_data_) {
      if (!data_.empty() && data_.back() == '\n') data_.pop_back();
      out.push_back({event_, data_});
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    return;
  }
  if (line_.front() != ':') {  // ':' starts a comment
    const std::size_t colon = line_.find(':');
    const std::string field = line_.substr(0, colon);
    std::string value;
    if (colon != std::string::npos) {
      value = line_.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    }
    if (field == "data") {
      data_ += value;
      data_ += '\n';
      has_data_ = true;
    } else if (field == "event") {
      event_ = value;
    }  // "id", "retry" and unknown fields mean nothing to a completion stream
  }
  line_.clear();
}

}  // namespace inferlab
