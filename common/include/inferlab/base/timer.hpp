#pragma once
/// @file timer.hpp
/// @brief Monotonic wall-clock time in seconds.

#include <chrono>

namespace inferlab {

/// @brief Seconds since an arbitrary fixed point (steady clock): subtract two readings.
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace inferlab
