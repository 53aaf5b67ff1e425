#pragma once
/// @file bpe.hpp
/// @brief The merge loop every BPE tokenizer here shares, and the byte-to-character map of
/// byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM2).
///
/// SentencePiece BPE (Llama 2) and byte-level BPE (GPT-2 and its descendants) run the same loop:
/// start from one symbol per character, repeatedly merge the adjacent pair with the best
/// priority, stop when no adjacent pair may merge. They differ in what "best" means: the higher
/// score of the merged piece (SentencePiece) or the earlier line in the merges list (BPE).

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

/// @brief The priority of merging two adjacent symbols (higher merges first), or nothing if
/// they may not merge.
using MergePriority =
    std::function<std::optional<double>(std::string_view left, std::string_view right)>;

/// @brief Merges @p symbols in place: the adjacent pair of highest priority first, the leftmost
/// on a tie, until no adjacent pair may merge.
/// @param symbols the text split into symbols (one per character to start with); on return the
///        merged symbols, in order, whose concatenation is unchanged
/// @param priority which pairs may merge, and in what order
/// @param ids if given, one id per symbol, kept in step with @p symbols: a merged symbol's id
///        becomes -1 (the caller looks its text up), an unmerged one keeps its own
/// @note O(n log n) for n symbols: the candidate pairs wait in a priority queue and a merge only
/// creates the two pairs around the new symbol; a queued pair whose symbols changed since it was
/// queued is skipped when it comes out.
void merge_symbols(std::vector<std::string>& symbols, const MergePriority& priority,
                   std::vector<int>* ids = nullptr);

/// @brief GPT-2's map from each byte to a printable character (as UTF-8): printable Latin-1
/// bytes stand for themselves, the others (controls, space, 0x7F-0xA0, 0xAD) are moved to
/// U+0100 onwards, so that ' ' becomes 'Ġ' and '\n' becomes 'Ċ'. Vocabulary pieces and merges
/// are written in these characters.
const std::array<std::string, 256>& byte_level_chars();

/// @brief @p bytes written in byte_level_chars() (what BPE merges operate on).
std::string to_byte_level(std::string_view bytes);

/// @brief The bytes @p text stands for, if it is made only of byte_level_chars() characters.
std::optional<std::string> from_byte_level(std::string_view text);

}  // namespace inferlab
