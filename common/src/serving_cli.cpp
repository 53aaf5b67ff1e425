// The serving chapters' shared command line: clock, workload, scheduler limits.
#include "inferlab/serving_cli.hpp"

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/input_checks.hpp"
#include "inferlab/request.hpp"
#include "inferlab/safe_files.hpp"
#include "inferlab/workload.hpp"

namespace inferlab {

namespace {

// The real clock really sleeps until each arrival.
void check_real_clock_wait(const Workload& w, bool sim) {
  if (sim || w.requests.empty()) return;
  const double last = w.requests.back().arrival;
  if (last > kMaxRealClockWaitSeconds) {
    throw Error(fmt::format("the last request arrives at {:g} s: the real clock really waits for "
                            "each arrival, up to {:g} s; use --clock sim for a longer workload",
                            last, kMaxRealClockWaitSeconds));
  }
}

}  // namespace

void add_serving_flags(CLI::App& app, ServingFlags& f) {
  app.add_option("--clock", f.clock, "real (run the model) or sim (roofline cost model)")
      ->check(CLI::IsMember({"real", "sim"}))
      ->capture_default_str();
  app.add_option("--hardware", f.hardware, "sim: the machine (see chapter 03)")
      ->capture_default_str();
  app.add_option("--config", f.config, "sim: the model shape to time")->capture_default_str();
  app.add_option("--rate", f.rate,
                 fmt::format("Poisson arrival rate, requests/s (0: all at once; default: real {:g}, "
                             "sim {:g})",
                             f.default_rate_real, f.default_rate_sim))
      ->check(finite_in(0.0, 1e6));
  app.add_option("--requests", f.requests,
                 fmt::format("requests to generate (default: real {}, sim {})",
                             f.default_requests_real, f.default_requests_sim))
      ->check(integer_in(1, kMaxRequests));
  app.add_option("--prompt-lens", f.prompt_lens,
                 "prompt length distribution, BOS included: fixed:N, uniform:LO:HI, "
                 "lognormal:MEAN[:SIGMA], pareto:MEAN[:ALPHA]")
      ->capture_default_str();
  app.add_option("--output-lens", f.output_lens, "output length distribution (same forms)")
      ->capture_default_str();
  app.add_option("--max-prompt", f.max_prompt, "cap on generated prompt lengths")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-output", f.max_output, "cap on generated output lengths")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-tokens", f.max_tokens,
                 "every request asks for this max_tokens and stops at its sampled output length "
                 "(0: max_tokens is the sampled length)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--workload-seed", f.workload_seed, "seed of the workload generator")
      ->check(unsigned_64())
      ->capture_default_str();
  app.add_option("--workload-file,--trace-file", f.workload_file,
                 "JSONL requests instead of generating: {\"arrival\": 0.25, \"prompt\": \"...\", "
                 "\"max_tokens\": 64} or \"prompt_len\": N");
  app.add_option("--max-batched-tokens", f.max_batched_tokens,
                 "token budget of one step (chunked prefill)")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--max-seqs", f.max_seqs, "batch slots: sequences running at once")
      ->check(integer_in(1, 1 << 16))
      ->capture_default_str();
}

void check_serving_flags(const CLI::App& app, const ServingFlags& f) {
  const bool sim = sim_clock(f);
  if (!sim) {
    for (const char* flag : {"--hardware", "--config"})
      if (app.count(flag)) throw Error(fmt::format("{} applies only to --clock sim", flag));
  } else {
    named_config(f.config);       // unknown names fail here, before any work
    hardware_by_name(f.hardware);
  }
  if (!f.workload_file.empty()) {
    for (const char* flag : {"--rate", "--requests", "--prompt-lens", "--output-lens",
                             "--max-prompt", "--max-output", "--workload-seed"})
      if (app.count(flag))
        throw Error(fmt::format("{} describes a generated workload: it does not apply with "
                                "--workload-file", flag));
    require_regular_file(f.workload_file, "workload file");
  }
}

bool sim_clock(const ServingFlags& f) {
  if (f.clock != "real" && f.clock != "sim")
    throw Error(fmt::format("--clock '{}' (expected real or sim)", f.clock));
  return f.clock == "sim";
}

Workload make_workload(const ServingFlags& f, const SamplingParams& sampling) {
  const bool sim = sim_clock(f);
  Workload w;
  if (!f.workload_file.empty()) {
    w.requests = load_trace(f.workload_file, sampling);
    w.description = fmt::format("{} requests from {}", w.requests.size(), f.workload_file);
    check_real_clock_wait(w, sim);
    return w;
  }
  WorkloadSpec spec;
  spec.requests = f.requests > 0 ? f.requests : (sim ? f.default_requests_sim : f.default_requests_real);
  spec.rate = f.rate >= 0 ? f.rate : (sim ? f.default_rate_sim : f.default_rate_real);
  spec.prompt = parse_length_distribution(f.prompt_lens);
  spec.output = parse_length_distribution(f.output_lens);
  spec.max_prompt = f.max_prompt;
  spec.max_output = f.max_output;
  spec.max_tokens = f.max_tokens;
  spec.seed = f.workload_seed;
  spec.sampling = sampling;
  w.requests = generate_workload(spec);
  w.description = fmt::format("{} requests, {}, prompt lengths {}, output lengths {}{} (seed {})",
                              spec.requests,
                              spec.rate > 0 ? fmt::format("Poisson arrivals at {:g}/s", spec.rate)
                                            : "all arriving at t = 0",
                              spec.prompt.describe(), spec.output.describe(),
                              spec.max_tokens > 0
                                  ? fmt::format(" under max_tokens {}", spec.max_tokens)
                                  : "",
                              spec.seed);
  check_real_clock_wait(w, sim);
  return w;
}

void check_workload_lengths(const Workload& w, const ServingFlags& f, const Tokenizer& tokenizer,
                            const ModelConfig& served) {
  try {
    for (const Request& r : w.requests) make_sequence(r, &tokenizer, served.vocab_size, served.seq_len);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}",
                            f.workload_file.empty() ? "the generated workload" : f.workload_file,
                            e.what()));
  }
}

SimEngine make_sim_engine(const ServingFlags& f, const LoadedModel& m) {
  SimEngine e;
  e.config = named_config(f.config);
  e.hardware = hardware_by_name(f.hardware);
  e.cost = cost_options_for(e.hardware);
  e.tokenizer = &*m.tokenizer;  // counts the tokens of text prompts
  return e;
}

SchedulerConfig scheduler_config(const ServingFlags& f, Policy policy) {
  SchedulerConfig c;
  c.policy = policy;
  c.max_seqs = f.max_seqs;
  c.max_batched_tokens = f.max_batched_tokens;
  return c;
}

}  // namespace inferlab
