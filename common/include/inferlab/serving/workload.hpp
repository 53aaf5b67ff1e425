#pragma once
/// @file workload.hpp
/// @brief Workloads for the serving engine: a seeded generator (Poisson arrivals, lengths from
/// fixed, uniform, lognormal or Pareto distributions; random prompts or prompts that share
/// prefixes: common prefixes, few-shot, multi-turn chats, RAG) and a JSONL workload-file reader.
///
/// Every random number comes from inferlab::Rng (xorshift64*) and hand-written transforms, so a
/// seed gives the same workload on every platform and standard library.

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "inferlab/serving/request.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace inferlab {

/// @brief The most requests a workload (generated or read from a workload file) may hold.
inline constexpr int kMaxRequests = 1'000'000;
/// @brief The latest arrival a workload may have, seconds (one day): beyond it the simulated
/// clock's times lose their meaning and the real clock would sleep for days.
inline constexpr double kMaxArrivalSeconds = 86400.0;
/// @brief The longest line a workload file may have, bytes (a prompt of about 250,000 tokens).
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;

/// @brief The token ids of generated prompts (WorkloadKind other than random) lie in
/// [kFirstWorkloadToken, kWorkloadVocab): above the special tokens 0..2 and inside the smallest
/// vocabulary the project serves (stories260K's 512), so one workload runs on every model.
inline constexpr int kFirstWorkloadToken = 3;
/// @brief See kFirstWorkloadToken: generated prompt ids are < kWorkloadVocab.
inline constexpr int kWorkloadVocab = 512;
/// @brief RAG document popularity: the document of rank k (1-based) is drawn with weight
/// 1 / k^kRagZipfExponent (Zipf's law: with 16 documents, the first is cited by about a third of
/// the requests, the last by a few percent).
inline constexpr double kRagZipfExponent = 1.0;

/// @brief What the prompts of a generated workload look like.
enum class WorkloadKind {
  random,         ///< prompts given by length only (Request::prompt_len), nothing shared
  shared_prefix,  ///< a fraction of the requests start with one of K common prefixes
  few_shot,       ///< one instruction + one of K tasks' examples + a unique question
  multi_turn,     ///< chats: every turn resends the conversation so far plus a new message
  rag,            ///< 1-3 documents drawn from a pool (Zipf popularity) + a unique question
};

/// @brief Parses "random", "shared-prefix", "few-shot", "multi-turn" or "rag".
/// @throws inferlab::Error listing the choices on anything else.
WorkloadKind parse_workload_kind(const std::string& name);
/// @brief The name parse_workload_kind() reads, e.g. "shared-prefix".
const char* workload_kind_name(WorkloadKind kind);

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
  double mean = 128.0;                  ///< fixed value, or the mean of lognormal / Pareto
  int lo = 1;                           ///< uniform: lower bound (inclusive), tokens
  int hi = 1;                           ///< uniform: upper bound (inclusive), tokens
  double sigma = 0.8;                   ///< lognormal: standard deviation of the underlying normal
  double alpha = 1.5;                   ///< Pareto shape (> 1 so the mean exists)

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
///
/// The prompt distribution gives the length of the part of each prompt that is the request's
/// own: the whole prompt (BOS included) for `random`, the unique suffix, question or user
/// message for the other kinds, whose prompts are token ids (Request::prompt_ids, BOS excluded).
/// With the defaults every request of every kind fits a context of 512 tokens (stories260K).
struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::random;  ///< what the prompts look like
  int requests = 64;  ///< how many (multi-turn: turns, over all conversations)
  /// Mean arrivals per second (Poisson); <= 0: all arrive at t = 0. Multi-turn: the rate at
  /// which conversations start (later turns arrive after their parent and a think time).
  double rate = 0.0;
  LengthDistribution prompt{LengthKind::lognormal, 96.0, 1, 1, 0.6, 1.5};   ///< own prompt part
  LengthDistribution output{LengthKind::lognormal, 128.0, 1, 1, 0.8, 1.5};  ///< max_tokens
  int max_prompt = 256;   ///< cap on the own prompt part's length
  int max_output = 1024;  ///< cap on output lengths
  /// 0: each request's max_tokens is its sampled output length (it generates exactly that).
  /// N > 0: every request asks for max_tokens = N and stops at its sampled length
  /// (Request::output_len), as clients that set a generous limit do.
  int max_tokens = 0;
  std::uint64_t seed = 1;   ///< same seed, same workload
  SamplingParams sampling;  ///< every request's settings; request i gets seed sampling.seed + i
  /// shared-prefix: how many common prefixes; few-shot: how many tasks (example sets).
  int prefixes = 5;
  /// Tokens of each common prefix (shared-prefix); of instruction + examples (few-shot: the
  /// instruction is the first prefix_len / 3 tokens, so shared lengths are not block-aligned);
  /// of the system prompt every conversation starts with (multi-turn; 0: none).
  int prefix_len = 128;
  double shared_fraction = 0.6;  ///< shared-prefix: probability a request uses a prefix
  int turns = 4;                 ///< multi-turn: turns per conversation (at most)
  double think_time = 1.0;       ///< multi-turn: mean seconds (exponential) before the next turn
  /// Multi-turn: the most tokens a conversation may reach in the worst case, BOS + system
  /// prompt + every turn's message and max_tokens. A turn that would pass it is not generated:
  /// the conversation ends there and the next request starts a new one (the first turn is
  /// always generated). Keep it <= the served context.
  int max_conversation = 512;
  int docs = 16;     ///< rag: documents in the pool
  int doc_len = 64;  ///< rag: tokens per document
  /// Tenants: request (multi-turn: conversation) i belongs to tenant "t{i mod tenants}"; 1: every
  /// request's tenant is "" (no salt).
  int tenants = 1;
};

/// @brief Generates a workload: exponential gaps between arrivals (a Poisson process),
/// max_tokens from the output distribution, and ignore_eos set so every request generates
/// exactly max_tokens tokens. Prompts by kind (token ids from a seeded stream, in
/// [kFirstWorkloadToken, kWorkloadVocab)):
/// - random: given by length (Request::prompt_len).
/// - shared-prefix: K prefixes of prefix_len ids; each request, with probability
///   shared_fraction, takes one of them (uniformly) followed by a unique suffix of the
///   prompt distribution's length; the others get a unique prompt of the same total length.
/// - few-shot: one instruction (prefix_len / 3 ids) shared by all, then one of K tasks'
///   examples (the rest of prefix_len; task chosen uniformly), then a unique question: a
///   two-level tree of shared prefixes.
/// - multi-turn: conversations start by the Poisson process; the first turn is the system
///   prompt (prefix_len ids, shared by every conversation) + a user message; turn t > 1 has
///   parent = turn t - 1, prompt_ids = its new message, think_time ~ exponential(think_time),
///   arrival 0 (the engine schedules it). Requests are numbered conversation by conversation.
/// - rag: K in {1, 2, 3} (uniform, at most docs) distinct documents drawn by Zipf popularity
///   (kRagZipfExponent) in the order drawn, like a retriever's ranking, + a unique question.
/// Arrivals, the own parts' lengths and output lengths come from the same streams in every
/// kind but multi-turn, so the same seed gives the same arrivals and lengths.
/// @param spec what to generate
/// @param shape if not null, receives a phrase saying what was generated, with realised
/// numbers, e.g. "shared-prefix: 118 of 200 requests (59%) start with one of 5 prefixes of 128
/// tokens (chosen uniformly)"; "random prompts" for random
/// @throws inferlab::Error if requests is outside [1, kMaxRequests], a cap < 1, the rate is not
/// finite or negative, the last arrival would come after kMaxArrivalSeconds, or a kind's
/// parameter is outside its range (prefixes in [1, 10000], prefix_len >= 1 for shared-prefix,
/// >= 2 for few-shot, shared_fraction in [0, 1], turns >= 1, think_time finite >= 0, a system
/// prompt that leaves no room in max_conversation, docs and doc_len >= 1, tenants >= 1).
std::vector<Request> generate_workload(const WorkloadSpec& spec, std::string* shape = nullptr);

/// @brief Reads a JSONL workload file, one request per line, e.g.
/// `{"arrival": 0.25, "prompt": "Once upon a time", "max_tokens": 64}`, with the prompt given by
/// exactly one of "prompt" (non-empty text), "prompt_len" (a length, BOS included: made-up ids)
/// or "prompt_ids" (a non-empty array of token ids in [0, 2^31), BOS excluded). Optional: the
/// sampling fields named like chapter 01's flags (temperature, top_k, top_p, min_p,
/// repetition_penalty, frequency_penalty, presence_penalty, seed) and ignore_eos; missing ones
/// take @p defaults (seed: defaults.seed + request id); "tenant" (a string); "parent" (the id of
/// an earlier request line: this request continues that conversation, see Request::parent) and
/// with it "think_time" (seconds, finite, >= 0). Blank lines and lines starting with '#' are
/// skipped. Requests are numbered in line order (0, 1, ...) and returned sorted by arrival
/// (stable); a request with a parent may arrive later than its "arrival" says.
/// @param in the JSONL text, read to its end
/// @param source name used in error messages (the file name)
/// @param defaults sampling settings for the fields a line leaves out
/// @return the requests, sorted by arrival, ids 0, 1, ... in line order
/// @throws inferlab::Error "source:LINE: what is wrong" for invalid JSON, an unknown key, a
/// missing or ill-typed field, a negative arrival, max_tokens < 1, not exactly one of prompt,
/// prompt_len and prompt_ids, an empty prompt or prompt_ids, a parent that is not an earlier
/// line's request, a think_time without a parent, or invalid sampling values; an integer
/// outside its range (max_tokens and prompt_len in [1, INT_MAX], prompt_ids in [0, INT_MAX],
/// top_k in [0, INT_MAX], seed any 64-bit unsigned), an arrival or think_time outside
/// [0, kMaxArrivalSeconds], a line longer than kMaxTraceLineBytes, more than
/// kMaxRequests requests.
std::vector<Request> read_workload_file(std::istream& in, const std::string& source,
                                        const SamplingParams& defaults = {});

/// @brief read_workload_file() on the file @p path. @throws inferlab::Error if it is not a regular file
/// (a FIFO, a directory, a device) or cannot be opened.
std::vector<Request> load_workload_file(const std::string& path,
                                        const SamplingParams& defaults = {});

}  // namespace inferlab
