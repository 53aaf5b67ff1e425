#pragma once
/// @file units.hpp
/// @brief Quantities in units: how many fixed-size units (KV blocks, pages) hold an amount
/// (ceil_div), and byte quantities for people: binary units (KiB, MiB, GiB = 2^10, 2^20, 2^30
/// bytes), with the decimal ones (kB, MB, GB = 10^3, 10^6, 10^9 bytes) next to them, so nobody
/// has to guess which one a figure is in. 4,096 tokens of Llama-3-70B's KV cache are 1.25 GiB,
/// which is 1.34 GB, not "1.28 GB".

#include <concepts>
#include <string>
#include <type_traits>

namespace inferlab {

/// @brief ceil(@p a / @p b): the units of size @p b that hold @p a (the blocks of b positions
/// that hold a positions).
/// @tparam A the amount's integer type
/// @tparam B the size's integer type
/// @param a the amount, >= 0
/// @param b the unit's size, >= 1
/// @return (a + b - 1) / b, in the common type of @p a and @p b
template <std::integral A, std::integral B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  return (a + b - 1) / b;
}

/// @brief "1.25 GiB (1.34 GB)": the binary unit that fits (B, KiB, MiB, GiB, TiB) with 3
/// significant digits, and the same quantity in the decimal unit of the same rank (kB, MB, GB,
/// TB) in brackets; "512 B" below 1 KiB.
std::string format_bytes(double bytes);

}  // namespace inferlab
