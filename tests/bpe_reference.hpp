#pragma once
// The BPE encoder exactly as karpathy/llama2.c run.c writes it (rescan every adjacent pair after
// each merge, O(n^2)), on the public Tokenizer API: the oracle the priority-queue encoder in
// tokenizer.cpp is compared against by the tests and the tokenizer_encode fuzz target.

#include <string>
#include <string_view>
#include <vector>

#include "inferlab/model/tokenizer.hpp"

namespace inferlab::test {

inline std::vector<int> reference_encode(const Tokenizer& t, std::string_view text,
                                         bool bos = true) {
  std::vector<int> symbols;
  auto add_code_point = [&](std::string_view cp) {
    if (const int id = t.find(cp); id >= 0) {
      symbols.push_back(id);
      return;
    }
    for (const char c : cp) symbols.push_back(3 + static_cast<unsigned char>(c));
  };
  if (!text.empty()) add_code_point(" ");
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    while (i + len < text.size() && len < 4 &&
           (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80)
      ++len;
    add_code_point(text.substr(i, len));
    i += len;
  }
  while (symbols.size() >= 2) {
    int best_id = -1;
    std::size_t best_pos = 0;
    for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
      const int id = t.find(t.piece(symbols[k]) + t.piece(symbols[k + 1]));
      if (id < 0) continue;
      if (best_id < 0 || t.score(id) > t.score(best_id)) {
        best_id = id;
        best_pos = k;
      }
    }
    if (best_id < 0) break;
    symbols[best_pos] = best_id;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_pos) + 1);
  }
  if (bos) symbols.insert(symbols.begin(), kBosToken);
  return symbols;
}

}  // namespace inferlab::test
