#pragma once
/// @file workload.hpp
/// @brief Workloads for the serving engine: a seeded generator (Poisson arrivals, lengths from
/// fixed, uniform, lognormal or Pareto distributions) and a JSONL trace reader.
///
/// Every random number comes from inferlab::Rng (xorshift64*) and hand-written transforms, so a
/// seed gives the same workload on every platform and standard library.

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "inferlab/request.hpp"
#include "inferlab/sampler.hpp"

namespace inferlab {

/// @brief The most requests a workload (generated or read from a trace) may hold.
inline constexpr int kMaxRequests = 1'000'000;
/// @brief The latest arrival a workload may have, seconds (one day): beyond it the simulated
/// clock's times lose their meaning and the real clock would sleep for days.
inline constexpr double kMaxArrivalSeconds = 86400.0;
/// @brief The longest line a trace may have, bytes (a prompt of about 250,000 tokens).
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;

/// @brief The shape of a length distribution.
enum class LengthKind {
  fixed,      ///< always `mean`
  uniform,    ///< integers in [lo, hi] with equal probability
  lognormal,  ///< exp(N(mu, sigma^2)) with mu chosen so the mean is `mean`: a long right tail
  pareto,     ///< xm / U^(1/alpha), xm chosen so the mean is `mean`: a heavy tail (alpha <= 2:
              ///< infinite variance; a few requests are far longer than the rest)
};

/// @brief A distribution of token counts. Write it as a string (parse_length_distribution):
/// "fixed:128", "uniform:16:256", "lognormal:128:0.8" (mean, sigma), "pareto:128:1.5"
/// (mean, alpha). Samples are rounded and clamped to [1, the generator's cap].
struct LengthDistribution {
  LengthKind kind = LengthKind::fixed;  ///< which family; selects the fields used below
  double mean = 128.0;  ///< fixed value, or the mean of lognormal / Pareto
  /// Uniform: lower bound (inclusive), tokens.
  int lo = 1, hi = 1;   ///< uniform: upper bound (inclusive), tokens
  double sigma = 0.8;   ///< lognormal: standard deviation of the underlying normal
  double alpha = 1.5;   ///< Pareto shape (> 1 so the mean exists)

  /// @brief One sample (before rounding and clamping), advancing @p rng.
  double sample(Rng& rng) const;
  /// @brief "lognormal:128:0.8" style, the form parse_length_distribution() reads.
  std::string describe() const;
};

/// @brief Parses "fixed:N", "uniform:LO:HI", "lognormal:MEAN[:SIGMA]" or "pareto:MEAN[:ALPHA]".
/// @throws inferlab::Error naming the accepted forms on anything else (and on mean <= 0,
/// lo < 1, lo > hi, sigma < 0, alpha <= 1).
LengthDistribution parse_length_distribution(const std::string& text);

/// @brief What the generator makes.
struct WorkloadSpec {
  int requests = 64;        ///< how many
  double rate = 0.0;        ///< mean arrivals per second (Poisson); <= 0: all arrive at t = 0
  LengthDistribution prompt{LengthKind::lognormal, 96.0, 1, 1, 0.6, 1.5};   ///< BOS included
  LengthDistribution output{LengthKind::lognormal, 128.0, 1, 1, 0.8, 1.5};  ///< max_tokens
  int max_prompt = 256;     ///< cap on prompt lengths
  int max_output = 1024;    ///< cap on output lengths
  /// 0: each request's max_tokens is its sampled output length (it generates exactly that).
  /// N > 0: every request asks for max_tokens = N and stops at its sampled length
  /// (Request::output_len), as clients that set a generous limit do.
  int max_tokens = 0;
  std::uint64_t seed = 1;   ///< same seed, same workload
  SamplingParams sampling;  ///< every request's settings; request i gets seed sampling.seed + i
};

/// @brief Generates a workload: exponential gaps between arrivals (a Poisson process), prompts
/// given by length (Request::prompt_len), max_tokens from the output distribution, and
/// ignore_eos set so every request generates exactly max_tokens tokens.
/// @throws inferlab::Error if requests is outside [1, kMaxRequests], a cap < 1, the rate is not
/// finite or negative, or the last arrival would come after kMaxArrivalSeconds.
std::vector<Request> generate_workload(const WorkloadSpec& spec);

/// @brief Reads a JSONL trace, one request per line, e.g.
/// `{"arrival": 0.25, "prompt": "Once upon a time", "max_tokens": 64}` or with
/// `"prompt_len": 300` instead of "prompt". Optional: the sampling fields named like chapter 01's
/// flags (temperature, top_k, top_p, min_p, repetition_penalty, frequency_penalty,
/// presence_penalty, seed) and ignore_eos; missing ones take @p defaults (seed: defaults.seed +
/// request id). Blank lines and lines starting with '#' are skipped. Requests are numbered in
/// line order and returned sorted by arrival (stable).
/// @param in the JSONL text, read to its end
/// @param source name used in error messages (the file name)
/// @param defaults sampling settings for the fields a line leaves out
/// @return the requests, sorted by arrival, ids 0, 1, ... in line order
/// @throws inferlab::Error "source:LINE: what is wrong" for invalid JSON, an unknown key, a
/// missing or ill-typed field, a negative arrival, max_tokens < 1, both or neither of prompt
/// and prompt_len, or invalid sampling values; an integer outside its range (max_tokens and
/// prompt_len in [1, INT_MAX], top_k in [0, INT_MAX], seed any 64-bit unsigned), an arrival
/// outside [0, kMaxArrivalSeconds], a line longer than kMaxTraceLineBytes, more than
/// kMaxRequests requests.
std::vector<Request> read_trace(std::istream& in, const std::string& source,
                                const SamplingParams& defaults = {});

/// @brief read_trace() on the file @p path. @throws inferlab::Error if it is not a regular file
/// (a FIFO, a directory, a device) or cannot be opened.
std::vector<Request> load_trace(const std::string& path, const SamplingParams& defaults = {});

}  // namespace inferlab
