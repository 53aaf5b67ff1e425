// The serving chapters' agreement check: the same tokens whatever the engine's choices.
#include "inferlab/serving/run_compare.hpp"

namespace inferlab {

bool same_tokens(const std::vector<EngineRun>& runs) {
  for (const EngineRun& r : runs) {
    if (r.requests.size() != runs.front().requests.size()) return false;
    for (std::size_t i = 0; i < r.requests.size(); ++i)
      if (r.requests[i].tokens != runs.front().requests[i].tokens) return false;
  }
  return true;
}

}  // namespace inferlab
