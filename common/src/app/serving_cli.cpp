// The serving chapters' shared command line: clock, workload, scheduler limits.
#include "inferlab/app/serving_cli.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/svg.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/serving/request.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/serving/workload.hpp"

namespace inferlab {

namespace {

// The real clock really sleeps until each arrival.
void check_real_clock_wait(const Workload& w, bool sim) {
  if (sim || w.requests.empty()) return;
  const double last = w.requests.back().arrival;
  if (last > kMaxRealClockWaitSeconds) {
    throw Error(
        fmt::format("the last request arrives at {:g} s: the real clock really waits for "
                    "each arrival, up to {:g} s; use --clock sim for a longer workload",
                    last, kMaxRealClockWaitSeconds));
  }
}

// A length distribution's text checked as the flag is read, so that the error names the flag.
CLI::Validator length_distribution() {
  return CLI::Validator(
      [](std::string& text) {
        try {
          parse_length_distribution(text);
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "DIST");
}

}  // namespace

void add_serving_flags(CLI::App& app, ServingFlags& f) {
  app.add_option("--clock", f.clock, "real (run the model) or sim (roofline cost model)")
      ->check(CLI::IsMember({"real", "sim"}))
      ->capture_default_str();
  app.add_option("--hardware", f.hardware, "sim: the machine (see chapter 03)")
      ->capture_default_str();
  app.add_option("--config", f.config, "sim: the model shape to time")->capture_default_str();
  app.add_option(
         "--rate", f.rate,
         fmt::format("Poisson arrival rate, requests/s (0: all at once; default: real {:g}, "
                     "sim {:g})",
                     f.default_rate_real, f.default_rate_sim))
      ->check(finite_in(0.0, 1e6));
  app.add_option("--requests", f.requests,
                 fmt::format("requests to generate (default: real {}, sim {})",
                             f.default_requests_real, f.default_requests_sim))
      ->check(integer_in(1, kMaxRequests));
  app.add_option("--prompt-lens", f.prompt_lens,
                 fmt::format("prompt length distribution, BOS included: fixed:N, uniform:LO:HI, "
                             "lognormal:MEAN[:SIGMA], pareto:MEAN[:ALPHA]. With a --workload "
                             "other than random: of each prompt's own part (suffix, question, "
                             "user message; multi-turn default {})",
                             f.multi_turn_prompt_lens))
      ->check(length_distribution())
      ->each([&f](const std::string&) { f.prompt_lens_given = true; })
      ->capture_default_str();
  app.add_option("--output-lens", f.output_lens,
                 fmt::format("output length distribution (same forms; multi-turn default {})",
                             f.multi_turn_output_lens))
      ->check(length_distribution())
      ->each([&f](const std::string&) { f.output_lens_given = true; })
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
                 "\"max_tokens\": 64}, or \"prompt_len\": N or \"prompt_ids\": [ids] instead of "
                 "\"prompt\"; optional \"tenant\", \"parent\" (id of an earlier line's request) "
                 "and \"think_time\"");
  app.add_option("--workload", f.workload,
                 "what the generated prompts share: random (nothing), shared-prefix, few-shot, "
                 "multi-turn or rag")
      ->check(CLI::Validator(
          [](std::string& name) {
            try {
              parse_workload_kind(name);
            } catch (const Error& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "NAME"))
      ->capture_default_str();
  app.add_option("--prefixes", f.prefixes,
                 "shared-prefix: common prefixes; few-shot: tasks (example sets)")
      ->check(integer_in(1, 10000))
      ->capture_default_str();
  app.add_option("--prefix-len", f.prefix_len,
                 "tokens of each shared prefix (shared-prefix), of instruction + examples "
                 "(few-shot; the instruction is the first third), of the system prompt "
                 "(multi-turn; 0: none)")
      ->check(integer_in(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--shared-fraction", f.shared_fraction,
                 "shared-prefix: probability that a request starts with a common prefix")
      ->check(finite_in(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--turns", f.turns, "multi-turn: turns per conversation (at most)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  app.add_option("--think-time", f.think_time,
                 "multi-turn: mean seconds between an answer and the next turn (exponential)")
      ->check(finite_in(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--max-conversation", f.max_conversation,
                 "multi-turn: a conversation's worst-case tokens (BOS + system prompt + every "
                 "turn's message and max_tokens) stay within this; a turn that would pass it "
                 "starts a new conversation instead. Keep it <= the model's context")
      ->check(integer_in(3, 1 << 24))
      ->capture_default_str();
  app.add_option("--docs", f.docs, "rag: documents in the pool")
      ->check(integer_in(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--doc-len", f.doc_len, "rag: tokens per document")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--tenants", f.tenants,
                 "generated requests (multi-turn: conversations) go round-robin to tenants "
                 "t0..tN-1, whose prefix-cache entries are kept apart (1: no tenant)")
      ->check(integer_in(1, 1'000'000))
      ->capture_default_str();
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
  refuse_inapplicable_flags(app, {{"--hardware", sim, "to --clock sim", "--clock real"},
                                  {"--config", sim, "to --clock sim", "--clock real"}});
  if (sim) {
    named_config(f.config);  // unknown names fail here, before any work
    hardware_by_name(f.hardware);
  }
  // Each workload kind's own flags, and the kinds that read them.
  struct KindFlag {
    const char* flag;
    std::vector<WorkloadKind> kinds;
  };
  using K = WorkloadKind;
  const std::vector<KindFlag> kind_flags = {
      {"--prefixes", {K::shared_prefix, K::few_shot}},
      {"--prefix-len", {K::shared_prefix, K::few_shot, K::multi_turn}},
      {"--shared-fraction", {K::shared_prefix}},
      {"--turns", {K::multi_turn}},
      {"--think-time", {K::multi_turn}},
      {"--max-conversation", {K::multi_turn}},
      {"--docs", {K::rag}},
      {"--doc-len", {K::rag}},
  };
  if (!f.workload_file.empty()) {
    for (const char* flag :
         {"--rate", "--requests", "--prompt-lens", "--output-lens", "--max-prompt", "--max-output",
          "--workload-seed", "--workload", "--tenants"})
      if (app.count(flag))
        throw Error(
            fmt::format("{} describes a generated workload: it does not apply with "
                        "--workload-file",
                        flag));
    for (const KindFlag& k : kind_flags)
      if (app.count(k.flag))
        throw Error(
            fmt::format("{} describes a generated workload: it does not apply with "
                        "--workload-file",
                        k.flag));
    require_regular_file(f.workload_file, "workload file");
    return;
  }
  const WorkloadKind kind = parse_workload_kind(f.workload);
  for (const KindFlag& k : kind_flags) {
    if (!app.count(k.flag) || std::find(k.kinds.begin(), k.kinds.end(), kind) != k.kinds.end())
      continue;
    std::string kinds;
    for (std::size_t i = 0; i < k.kinds.size(); ++i)
      kinds += fmt::format("{}{}",
                           i == 0                    ? ""
                           : i + 1 == k.kinds.size() ? " or "
                                                     : ", ",
                           workload_kind_name(k.kinds[i]));
    throw Error(fmt::format("{} applies only to --workload {}, not {}", k.flag, kinds,
                            workload_kind_name(kind)));
  }
  // The bounds that depend on the kind (generate_workload checks them too, without flag names).
  if ((kind == WorkloadKind::shared_prefix && f.prefix_len < 1) ||
      (kind == WorkloadKind::few_shot && f.prefix_len < 2))
    throw Error(fmt::format("--prefix-len {} is too short for --workload {} (at least {}{})",
                            f.prefix_len, f.workload, kind == WorkloadKind::few_shot ? 2 : 1,
                            kind == WorkloadKind::few_shot ? ": an instruction and examples" : ""));
  if (kind == WorkloadKind::multi_turn && std::int64_t{f.prefix_len} + 3 > f.max_conversation)
    throw Error(
        fmt::format("--prefix-len {} (the system prompt) leaves no room for a turn in "
                    "--max-conversation {}",
                    f.prefix_len, f.max_conversation));
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
    w.requests = load_workload_file(f.workload_file, sampling);
    w.description = fmt::format("{} requests from {}", w.requests.size(), f.workload_file);
    std::size_t continuing = 0;
    std::set<std::string> tenants;
    for (const Request& r : w.requests) {
      continuing += r.parent >= 0;
      if (!r.tenant.empty()) tenants.insert(r.tenant);
    }
    if (continuing > 0)
      w.description += fmt::format(", {} continuing an earlier request's conversation", continuing);
    if (!tenants.empty()) w.description += fmt::format(", {} tenants", tenants.size());
    check_real_clock_wait(w, sim);
    return w;
  }
  WorkloadSpec spec;
  spec.requests =
      f.requests > 0 ? f.requests : (sim ? f.default_requests_sim : f.default_requests_real);
  spec.rate = f.rate >= 0 ? f.rate : (sim ? f.default_rate_sim : f.default_rate_real);
  spec.kind = parse_workload_kind(f.workload);
  const bool chat = spec.kind == WorkloadKind::multi_turn;
  spec.prompt = parse_length_distribution(chat && !f.prompt_lens_given ? f.multi_turn_prompt_lens
                                                                       : f.prompt_lens);
  spec.output = parse_length_distribution(chat && !f.output_lens_given ? f.multi_turn_output_lens
                                                                       : f.output_lens);
  spec.max_prompt = f.max_prompt;
  spec.max_output = f.max_output;
  spec.max_tokens = f.max_tokens;
  spec.seed = f.workload_seed;
  spec.sampling = sampling;
  spec.prefixes = f.prefixes;
  spec.prefix_len = f.prefix_len;
  spec.shared_fraction = f.shared_fraction;
  spec.turns = f.turns;
  spec.think_time = f.think_time;
  spec.max_conversation = f.max_conversation;
  spec.docs = f.docs;
  spec.doc_len = f.doc_len;
  spec.tenants = f.tenants;
  std::string shape;
  w.requests = generate_workload(spec, &shape);
  const bool random = spec.kind == WorkloadKind::random;
  const bool multi_turn = spec.kind == WorkloadKind::multi_turn;
  // `random` keeps chapter 04's description; the other kinds say what their prompts share
  // first, and that the length distribution is of each prompt's own part.
  w.description = fmt::format(
      "{} requests, {}{}, {} {}, output lengths {}{} (seed {})", spec.requests,
      random ? "" : shape + ", ",
      spec.rate > 0
          ? fmt::format("{} at {:g}/s",
                        multi_turn ? "conversations start Poisson" : "Poisson arrivals", spec.rate)
          : (multi_turn ? "conversations all starting at t = 0" : "all arriving at t = 0"),
      random       ? "prompt lengths"
      : multi_turn ? "user messages"
                   : "unique prompt parts",
      spec.prompt.describe(), spec.output.describe(),
      spec.max_tokens > 0 ? fmt::format(" under max_tokens {}", spec.max_tokens) : "", spec.seed);
  if (random && spec.tenants > 1)
    w.description += fmt::format(", {} tenants (round-robin)", spec.tenants);
  check_real_clock_wait(w, sim);
  return w;
}

void check_workload_lengths(const Workload& w, const ServingFlags& f, const Tokenizer& tokenizer,
                            const ModelConfig& served) {
  const std::string source = f.workload_file.empty() ? "the generated workload" : f.workload_file;
  // Each request's whole prompt in the worst case, by id: a request that continues a
  // conversation resends its parent's prompt and everything the parent may generate.
  struct Worst {
    std::int64_t prompt;  // BOS + everything resent + its own prompt
    int max_tokens;
  };
  std::unordered_map<int, Worst> worst;
  std::vector<const Request*> by_id;
  for (const Request& r : w.requests) by_id.push_back(&r);
  // Parents come before their children in id order (read_workload_file and the generator promise it).
  std::sort(by_id.begin(), by_id.end(),
            [](const Request* a, const Request* b) { return a->id < b->id; });
  for (const Request* r : by_id) {
    Sequence s;
    try {
      s = make_sequence(*r, &tokenizer, served.vocab_size, served.seq_len);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", source, e.what()));
    }
    std::int64_t prompt = s.prompt_tokens;
    if (r->parent >= 0) {
      const auto parent = worst.find(r->parent);
      if (parent == worst.end() || r->parent >= r->id)
        throw Error(fmt::format("{}: request {}: its parent {} is not an earlier request", source,
                                r->id, r->parent));
      const Worst& p = parent->second;
      // The parent's tokens (BOS + prompt + generated) then this request's own, BOS excluded.
      prompt = p.prompt + p.max_tokens + (s.prompt_tokens - 1);
      if (prompt > served.seq_len) {
        throw Error(fmt::format(
            "{}: request {}: continuing request {} (a prompt of up to {} tokens + max_tokens "
            "{}), its prompt reaches {} tokens in the worst case but the context is {}{}",
            source, r->id, r->parent, p.prompt, p.max_tokens, prompt, served.seq_len,
            f.workload_file.empty()
                ? fmt::format(": lower --max-conversation to {}", served.seq_len)
                : ""));
      }
    }
    worst[r->id] = Worst{prompt, r->max_tokens};
  }
}

void require_kv_budget(std::size_t budget_bytes, const SimEngine* sim, const std::string& flag) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const std::string what = fmt::format("{} {:g} MiB", flag, double(budget_bytes) / kMiB);
  if (!sim) {
    require_allocation(double(budget_bytes), what);
    return;
  }
  if (double(budget_bytes) > sim->hardware.memory_bytes) {
    throw Error(fmt::format("{} is more than the {:.1f} GB of one simulated {}", what,
                            sim->hardware.memory_bytes / 1e9, sim->hardware.name));
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

std::vector<FlagScope> real_clock_flag_scopes(const ServingFlags& f) {
  const bool real = !sim_clock(f);
  std::vector<FlagScope> scopes;
  for (const char* flag :
       {"--device", "--threads", "--weights", "--reps", "--temperature", "--top-k", "--top-p",
        "--min-p", "--repetition-penalty", "--frequency-penalty", "--presence-penalty", "--seed"})
    scopes.push_back({flag, real, "to --clock real", "--clock " + f.clock});
  return scopes;
}

ServedModel::ServedModel(const ServingFlags& s, const GenerationFlags& g, DType kv_type)
    // The simulated clock needs no weights: a tokenizer counts the tokens of text prompts.
    : loaded(sim_clock(s) ? load_model_or_tokenizer(g) : load_model(g)) {
  if (sim_clock(s)) {
    engine.sim = make_sim_engine(s, loaded);
    engine.sim->kv_type = kv_type;
  } else {
    engine.real = {&*loaded.model, &*loaded.tokenizer, kv_type, parse_device(g.device)};
  }
}

const ModelConfig& ServedModel::config() const {
  return engine.sim ? engine.sim->config : loaded.model->config();
}

std::string ServedModel::name(const ServingFlags& s) const {
  return engine.sim ? s.config : loaded.model->name();
}

std::string ServedModel::plot_name(const ServingFlags& s) const {
  return engine.sim ? s.config : title_model_name(loaded.model->name());
}

void print_serving_title(const std::string& title, const ServedModel& m, const GenerationFlags& g,
                         const ServingFlags& s) {
  if (m.engine.sim)
    std::printf("%s (simulated: %s on %s)\n", title.c_str(), s.config.c_str(),
                m.engine.sim->hardware.description.c_str());
  else
    print_run_header((title + " (real clock)").c_str(), m.loaded, g);
}

SchedulerConfig scheduler_config(const ServingFlags& f, Policy policy) {
  SchedulerConfig c;
  c.policy = policy;
  c.max_seqs = f.max_seqs;
  c.max_batched_tokens = f.max_batched_tokens;
  return c;
}

nlohmann::json request_json(const RequestResult& r) {
  return {{"id", r.request.id},
          {"branch", r.branch},
          {"tenant", r.request.tenant},
          {"parent", r.request.parent},
          {"arrival_s", r.request.arrival},
          {"prompt", r.request.prompt},
          {"prompt_tokens", r.prompt_tokens},
          {"tokens", r.tokens},
          {"generated_tokens", r.generated()},
          {"cached_tokens", r.cached_tokens},
          {"preemptions", r.preemptions},
          {"stop_reason", stop_reason_name(r.stop_reason)},
          {"text", r.text},
          {"ttft_s", r.metrics.ttft},
          {"tpot_s", r.metrics.tpot},
          {"e2e_s", r.metrics.e2e}};
}

nlohmann::json requests_json(const EngineRun& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const RequestResult& r : run.requests) out.push_back(request_json(r));
  return out;
}

std::string sim_memory_fit_line(const SimEngine& engine, std::size_t kv_budget_bytes) {
  // The weights alone, then the budget as the KV part (it is given in bytes, whatever the type).
  MemoryFit fit =
      memory_fit(engine.config, DType::bf16, DType::f32, 1, 0, engine.hardware.memory_bytes);
  fit.kv_bytes = double(kv_budget_bytes);
  fit.needed_bytes = fit.weight_bytes + fit.kv_bytes;
  fit.fits = fit.needed_bytes <= fit.device_bytes;
  return memory_fit_message(fit);
}

void print_sim_memory_fit(const SimEngine& engine, std::size_t kv_budget_bytes) {
  std::printf("           weights (bf16) + this KV budget on one %s: %s\n",
              engine.hardware.name.c_str(), sim_memory_fit_line(engine, kv_budget_bytes).c_str());
}

void print_columns(const std::string& corner, const std::vector<std::string>& columns,
                   const std::vector<std::pair<std::string, std::vector<std::string>>>& rows,
                   int label_width, int width) {
  std::printf("%-*s", label_width, corner.c_str());
  for (const std::string& c : columns) std::printf("  %*s", width, c.c_str());
  std::printf("\n");
  for (const auto& [label, cells] : rows) {
    std::printf("%-*s", label_width, label.c_str());
    for (const std::string& c : cells) std::printf("  %*s", width, c.c_str());
    std::printf("\n");
  }
}

}  // namespace inferlab
