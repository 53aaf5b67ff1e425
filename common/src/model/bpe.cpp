/// @file bpe.cpp
/// @brief The shared BPE merge loop and GPT-2's byte-to-character map.
#include "inferlab/model/bpe.hpp"

#include <queue>
#include <unordered_map>

namespace inferlab {

void merge_symbols(std::vector<std::string>& symbols, const MergePriority& priority,
                   std::vector<int>* ids) {
  // The symbols form a linked list; every pair that may merge waits in a priority queue, best
  // first, then leftmost. A symbol keeps its index when it absorbs its right neighbour, so the
  // index order is the text order.
  const int n = static_cast<int>(symbols.size());
  std::vector<int> next(static_cast<std::size_t>(n)), prev(static_cast<std::size_t>(n));
  std::vector<unsigned> version(static_cast<std::size_t>(n), 0);  // bumped on every change
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    double priority;
    int left, right;
    unsigned left_version, right_version;
  };
  // std::priority_queue pops the largest: the higher priority, then the smaller (leftmost) index.
  auto lower = [](const Candidate& a, const Candidate& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower)> queue(lower);
  auto queue_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    if (const auto p = priority(symbols[left], symbols[right]))
      queue.push({*p, left, right, version[left], version[right]});
  };
  for (int i = 0; i + 1 < n; ++i) queue_pair(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    // Unchanged versions mean both symbols are as queued and still adjacent: the right one can
    // only leave the list by merging into the left one, which changes both.
    if (version[c.left] != c.left_version || version[c.right] != c.right_version) continue;
    symbols[c.left] += symbols[c.right];
    if (ids) (*ids)[std::size_t(c.left)] = -1;
    ++version[c.left];
    ++version[c.right];  // removed from the list
    next[c.left] = next[c.right];
    if (next[c.right] >= 0) prev[next[c.right]] = c.left;
    queue_pair(prev[c.left], c.left);
    queue_pair(c.left, next[c.left]);
  }
  std::vector<std::string> merged;
  std::vector<int> merged_ids;
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) {
    merged.push_back(std::move(symbols[i]));
    if (ids) merged_ids.push_back((*ids)[std::size_t(i)]);
  }
  symbols = std::move(merged);
  if (ids) *ids = std::move(merged_ids);
}

namespace {

std::string utf8_of(unsigned code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else {  // the map only uses code points below U+0800: two bytes
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
  return out;
}

const std::unordered_map<std::string, unsigned char>& byte_of_char() {
  static const std::unordered_map<std::string, unsigned char> map = [] {
    std::unordered_map<std::string, unsigned char> m;
    for (int b = 0; b < 256; ++b) m.emplace(byte_level_chars()[b], static_cast<unsigned char>(b));
    return m;
  }();
  return map;
}

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> map;
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    unsigned moved = 256;  // the non-printable bytes, in order, take U+0100, U+0101, ...
    for (int b = 0; b < 256; ++b)
      map[static_cast<std::size_t>(b)] = utf8_of(printable(b) ? static_cast<unsigned>(b) : moved++);
    return map;
  }();
  return chars;
}

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += byte_level_chars()[static_cast<unsigned char>(c)];
  return out;
}

std::optional<std::string> from_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    // Every character of the map is one or two bytes of UTF-8.
    const std::size_t len = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : 2;
    const auto it = byte_of_char().find(std::string(text.substr(i, len)));
    if (it == byte_of_char().end()) return std::nullopt;
    out += static_cast<char>(it->second);
    i += len;
  }
  return out;
}

}  // namespace inferlab
