// The streamed text of one sequence: UTF-8 holdback (StreamDecoder) and stop strings.
#include "inferlab/serving/text_stream.hpp"

#include <algorithm>

namespace inferlab {

std::size_t stop_prefix_overlap(const std::string& text, const std::vector<std::string>& stop) {
  std::size_t best = 0;
  for (const std::string& s : stop) {
    // Longest k < |s| with text ending in s[0, k); a longer k cannot beat what is found.
    for (std::size_t k = std::min(s.size() - 1, text.size()); k > best; --k) {
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        best = k;
        break;
      }
    }
  }
  return best;
}

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop,
                       int last_prompt_token)
    : decoder_(tokenizer), prev_(last_prompt_token) {
  for (std::string& s : stop)
    if (!s.empty()) stop_.push_back(std::move(s));
}

std::string TextStream::release(bool at_end) {
  // The earliest stop string wins: everything before it is sent, it and the rest are not.
  std::size_t first = std::string::npos;
  for (const std::string& s : stop_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  const std::size_t keep = at_end ? 0 : stop_prefix_overlap(held_, stop_);
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string TextStream::push(int token) {
  if (stopped_) return {};
  held_ += decoder_.push(prev_, token);
  prev_ = token;
  return release(/*at_end=*/false);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  held_ += decoder_.flush();
  return release(/*at_end=*/true);
}

}  // namespace inferlab
