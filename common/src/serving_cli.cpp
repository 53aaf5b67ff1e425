// The serving chapters' shared command line: clock, workload, scheduler limits.
#include "inferlab/serving_cli.hpp"

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/workload.hpp"

namespace inferlab {

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
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--requests", f.requests,
                 fmt::format("requests to generate (default: real {}, sim {})",
                             f.default_requests_real, f.default_requests_sim))
      ->check(CLI::Range(1, 1000000));
  app.add_option("--prompt-lens", f.prompt_lens,
                 "prompt length distribution, BOS included: fixed:N, uniform:LO:HI, "
                 "lognormal:MEAN[:SIGMA], pareto:MEAN[:ALPHA]")
      ->capture_default_str();
  app.add_option("--output-lens", f.output_lens, "output length distribution (same forms)")
      ->capture_default_str();
  app.add_option("--max-prompt", f.max_prompt, "cap on generated prompt lengths")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-output", f.max_output, "cap on generated output lengths")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-tokens", f.max_tokens,
                 "every request asks for this max_tokens and stops at its sampled output length "
                 "(0: max_tokens is the sampled length)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--workload-seed", f.workload_seed, "seed of the workload generator")
      ->capture_default_str();
  app.add_option("--workload-file,--trace-file", f.workload_file,
                 "JSONL requests instead of generating: {\"arrival\": 0.25, \"prompt\": \"...\", "
                 "\"max_tokens\": 64} or \"prompt_len\": N");
  app.add_option("--max-batched-tokens", f.max_batched_tokens,
                 "token budget of one step (chunked prefill)")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--max-seqs", f.max_seqs, "batch slots: sequences running at once")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
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
  return w;
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
