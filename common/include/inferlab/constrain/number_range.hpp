#pragma once
/// @file number_range.hpp
/// @brief Numeric bounds as regular languages over decimal digits: the integers of a range,
/// the decimals (no exponent) between two bounds, the multiples of a divisor. JSON Schema's
/// minimum / maximum / exclusive bounds and multipleOf compile to these (json_schema_spec.hpp).
///
/// Numbers are written as JSON writes them: no leading zeros, an optional minus sign. An
/// integer may carry a fraction of zeros ("1.0" is an integer in JSON Schema, draft 6 on).

#include <cstdint>
#include <optional>
#include <string>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief An integer of any size, as its sign and decimal digits (JSON Schema bounds such as
/// 1e30 are integers far beyond 64 bits).
struct DecimalInteger {
  bool negative = false;        ///< below zero (never for zero)
  std::string magnitude = "0";  ///< |value| in decimal, without leading zeros
  /// @brief The integer @p v.
  DecimalInteger(std::int64_t v);  // NOLINT(google-explicit-constructor): a literal is one
  /// @brief The integer @p v (which must be integral and finite), digit for digit.
  static DecimalInteger from_double(double v);
  /// @brief This integer plus @p delta (-1 or +1).
  DecimalInteger plus(int delta) const;
  /// @brief Orders two integers by value.
  friend bool operator<(const DecimalInteger& a, const DecimalInteger& b);

 private:
  DecimalInteger() = default;
};

/// @brief The integers in [min, max]; a missing side is unbounded.
struct IntegerRange {
  std::optional<DecimalInteger> min;  ///< smallest integer, inclusive
  std::optional<DecimalInteger> max;  ///< largest integer, inclusive
};

/// @brief A non-negative number as decimal digits without exponent: `whole.frac`.
struct DecimalDigits {
  std::uint64_t whole = 0;  ///< the integer part
  std::string frac;         ///< the fraction digits, without trailing zeros ("" when none)
};

/// @brief The shortest decimal digits of |@p v| that read back as |@p v| (0.1 is "0.1", not
/// 0.1000000000000000055), or std::nullopt when |v| is at least 1e15 or a non-zero below
/// 1e-12, which the digit-by-digit grammars here do not write.
std::optional<DecimalDigits> decimal_digits(double v);

/// @brief Bounds on a magnitude (a number >= 0); a missing side is unbounded.
struct MagnitudeRange {
  std::optional<DecimalDigits> min;  ///< lower bound
  bool min_exclusive = false;        ///< true: the magnitude must be above min, not equal
  std::optional<DecimalDigits> max;  ///< upper bound
  bool max_exclusive = false;        ///< true: the magnitude must be below max, not equal
};

/// @brief The numbers between two bounds, split at zero: x >= 0 is a magnitude within
/// `nonnegative`, x < 0 is "-" and a magnitude within `negative` (the bounds mirrored). A part
/// that holds no number is std::nullopt.
struct DecimalRange {
  std::optional<MagnitudeRange> nonnegative;  ///< the range's numbers >= 0
  std::optional<MagnitudeRange> negative;     ///< the magnitudes of the range's numbers < 0
};

/// @brief Appends the optional fraction of zeros an integer may carry: `(\.0{1,8})?` (at most
/// 8 zeros, so that a model cannot stall in "1.0000..." forever); returns its expression.
int integer_zero_fraction(Grammar& g);

/// @brief Appends the integers of @p range (each with integer_zero_fraction()): the
/// non-negative ones and "-" before the magnitudes of the negative ones, each length of digits
/// split into runs of digit ranges; returns the expression (matching nothing when the range
/// is empty).
int integer_range(Grammar& g, const IntegerRange& range);

/// @brief Appends the decimals of @p range, without exponent (a subset of the JSON numbers in
/// the range, never a superset), decided digit by digit: the integer part first, then the
/// fraction where the integer part equals a bound's; returns the expression.
int decimal_range(Grammar& g, const DecimalRange& range);

/// @brief Appends the integers divisible by @p divisor (>= 1): a remainder automaton over the
/// decimal digits, one rule per remainder (so @p divisor rules); returns the expression.
int multiple_of(Grammar& g, int divisor);

}  // namespace inferlab
