// Byte quantities for people.
#include "inferlab/base/units.hpp"

#include <cmath>

#include <fmt/format.h>

namespace inferlab {

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  static const char* kDecimal[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  double v = bytes;
  while (std::abs(v) >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  std::string s = u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.3g} {}", v, kUnits[u]);
  if (u > 0) s += fmt::format(" ({:.3g} {})", bytes / std::pow(1000.0, u), kDecimal[u]);
  return s;
}

}  // namespace inferlab
