#pragma once
/// @file run_compare.hpp
/// @brief The agreement check of every serving chapter: serving the same requests another way
/// (another policy, allocator or prefix cache) must not change a single token.
#include <vector>

#include "inferlab/serving/engine.hpp"

namespace inferlab {

/// @brief True when every run of @p runs has the same number of results as the first and each
/// result's tokens equal the first run's at the same index (true for fewer than two runs).
bool same_tokens(const std::vector<EngineRun>& runs);

}  // namespace inferlab
