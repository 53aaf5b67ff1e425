// The serving engine: batch invariance (every request's greedy tokens under continuous batching
// with chunked prefill equal the single-request tokens: llama2.c's golden ones when here), the
// simulator's clock, and the trace / plot outputs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "inferlab/serving/decode_sweep.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/decode_throughput.hpp"
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/app/trace.hpp"
#include "inferlab/serving/workload.hpp"
#include "model_cases.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

// One request per greedy case, asking for exactly the tokens the reference generated (its
// `steps` positions: steps - P + 1 new tokens), arriving a little apart so batches mix prefill
// chunks of newcomers with decodes of earlier ones.
std::vector<Request> golden_requests(const std::vector<test::GreedyCase>& cases) {
  std::vector<Request> reqs;
  for (const auto& c : cases) {
    Request r;
    r.id = static_cast<int>(reqs.size());
    r.prompt = c.prompt;
    r.max_tokens = c.steps - static_cast<int>(c.prompt_tokens.size()) + 1;
    r.sampling.temperature = 0.0f;
    reqs.push_back(r);
  }
  return reqs;
}

SimEngine h100_llama() {
  SimEngine e;
  e.config = named_config("llama3-8b");
  e.hardware = hardware_by_name("h100-sxm");
  return e;
}

}  // namespace

TEST_CASE("batch invariance: batched greedy tokens equal each request's golden tokens",
          "[engine][invariant]") {
  // The golden tokens are llama2.c's when its outputs are here, else generate()'s (one sequence
  // alone): either way, batching must not change a single token.
  const test::ModelCases mc = test::model_cases();
  const Model& model = mc.model;
  const Tokenizer& tok = mc.tokenizer;
  const std::vector<Request> reqs = golden_requests(mc.cases);
  REQUIRE(reqs.size() >= 6);
  // Small budgets force prompts into several chunks next to other sequences' decodes; few
  // slots force queueing, so the batch composition changes all the time.
  for (const SchedulerConfig config :
       {SchedulerConfig{Policy::continuous, 3, 7}, SchedulerConfig{Policy::continuous, 6, 4},
        SchedulerConfig{Policy::static_batching, 4, 16}}) {
    INFO(policy_name(config.policy)
         << " max_seqs " << config.max_seqs << " budget " << config.max_batched_tokens);
    const EngineRun run = run_real(reqs, config, {&model, &tok, DType::f32, Device::cpu, {}});
    REQUIRE(run.requests.size() == reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const test::GreedyCase& c = mc.cases[i];
      INFO("case " << c.name);
      CHECK(run.requests[i].prompt_tokens == c.prompt_tokens);
      CHECK(run.requests[i].tokens == c.tokens);
      CHECK(run.requests[i].text == c.text);
      CHECK(run.requests[i].metrics.output_tokens == run.requests[i].generated());
    }
    // The run really mixed things: some step had a prompt chunk next to a decode, and some
    // prompt was split over several steps.
    bool mixed = false, split = false;
    std::map<int, int> prefill_chunks;
    for (const EngineStep& s : run.steps) {
      mixed = mixed || (s.decode_tokens > 0 && s.prefill_tokens > 0);
      CHECK(s.tokens() <= config.max_batched_tokens);
      CHECK(s.running <= config.max_seqs);
      for (const StepChunk& ch : s.chunks)
        if (ch.prefill) split = split || ++prefill_chunks[ch.request] > 1;
    }
    CHECK(mixed);
    CHECK(split);
  }
}

TEST_CASE(
    "the real engine samples each request with its own RNG: same tokens under both "
    "policies",
    "[engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  WorkloadSpec spec;
  spec.requests = 10;
  spec.prompt = parse_length_distribution("uniform:2:20");
  spec.output = parse_length_distribution("uniform:1:30");
  spec.sampling.temperature = 0.9f;
  spec.sampling.top_p = 0.9f;
  const auto reqs = generate_workload(spec);
  const EngineRun a =
      run_real(reqs, {Policy::continuous, 4, 9}, {&model, &tok, DType::f32, Device::cpu, {}});
  const EngineRun b =
      run_real(reqs, {Policy::static_batching, 3, 64}, {&model, &tok, DType::f32, Device::cpu, {}});
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    CHECK(a.requests[i].tokens == b.requests[i].tokens);
    CHECK(a.requests[i].generated() == reqs[i].max_tokens);  // ignore_eos: exact lengths
  }
  // The chapters' agreement check says the same, and notices one changed token.
  std::vector<EngineRun> runs = {a, b};
  CHECK(same_tokens(runs));
  runs[1].requests[3].tokens.back() += 1;
  CHECK_FALSE(same_tokens(runs));
  runs[1] = a;
  runs[1].requests.pop_back();
  CHECK_FALSE(same_tokens(runs));
}

TEST_CASE("sim clock: every step takes step_time_seconds of its shape", "[engine]") {
  const SimEngine engine = h100_llama();
  WorkloadSpec spec;
  spec.requests = 40;
  spec.rate = 50.0;
  spec.prompt = parse_length_distribution("lognormal:300:0.5");
  spec.output = parse_length_distribution("pareto:100:1.5");
  spec.max_prompt = 1024;
  spec.max_output = 1000;
  const auto reqs = generate_workload(spec);
  const EngineRun run = run_sim(reqs, {Policy::continuous, 16, 256}, engine);
  REQUIRE_FALSE(run.steps.empty());
  CHECK(run.clock == "sim");
  double previous_end = 0.0;
  for (const EngineStep& s : run.steps) {
    // The shape built by hand from the chunks, with the chapter 03 helpers.
    StepShape shape;
    for (const StepChunk& c : s.chunks) {
      if (c.prefill)
        shape.add_prefill(c.count, c.start);
      else
        shape.add_decode(c.start + 1);
    }
    CHECK(s.end - s.start ==
          Approx(step_time_seconds(engine.config, engine.hardware, shape)).epsilon(1e-9));
    CHECK(s.start >= previous_end);
    previous_end = s.end;
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const RequestResult& r = run.requests[i];
    CHECK(r.generated() == reqs[i].max_tokens);
    CHECK(r.timeline.token_times.front() >= reqs[i].arrival);
    CHECK(r.metrics.ttft > 0.0);
  }
  CHECK(run.metrics.requests == 40);
}

TEST_CASE("sim: continuous batching beats static on variable output lengths", "[engine]") {
  const SimEngine engine = h100_llama();
  WorkloadSpec spec;
  spec.requests = 200;
  spec.rate = 0.0;  // all at once: pure throughput
  spec.prompt = parse_length_distribution("fixed:128");
  spec.output = parse_length_distribution("pareto:128:1.5");
  spec.max_output = 2000;
  const auto reqs = generate_workload(spec);
  const EngineRun st = run_sim(reqs, {Policy::static_batching, 32, 2048}, engine);
  const EngineRun co = run_sim(reqs, {Policy::continuous, 32, 2048}, engine);
  // Same tokens generated, far less time: static slots idle behind each batch's longest member.
  CHECK(st.metrics.output_tokens == co.metrics.output_tokens);
  CHECK(co.metrics.throughput_tokens > 1.5 * st.metrics.throughput_tokens);
  CHECK(co.mean_slot_utilisation > st.mean_slot_utilisation + 0.2);
  // While requests wait, continuous batching keeps (nearly) every slot busy; static does not.
  auto busy_while_queued = [](const EngineRun& run) {
    double active = 0.0;
    int steps = 0;
    for (const EngineStep& s : run.steps) {
      if (s.waiting == 0) continue;
      active += static_cast<double>(s.active) / run.scheduler.max_seqs;
      ++steps;
    }
    return active / steps;
  };
  CHECK(busy_while_queued(co) > 0.95);
  CHECK(busy_while_queued(st) < 0.7);
  // An SLO every request meets counts them all; an impossible one counts none.
  CHECK(run_serving_metrics(co, {1e9, 1e9}).slo_attainment == 1.0);
  CHECK(run_serving_metrics(co, {1e-9, 1e9}).goodput == 0.0);
}

TEST_CASE("paged runs keep the block tables of the step where they were most scattered",
          "[engine]") {
  SimEngine engine = h100_llama();
  engine.memory.allocator = Allocator::paged;
  engine.memory.block_size = 16;
  engine.memory.budget_bytes = 4096 * kv_storage_bytes_per_token(engine.config, engine.kv_type);
  WorkloadSpec spec;
  spec.requests = 24;
  spec.rate = 20.0;
  const EngineRun run = run_sim(generate_workload(spec), {Policy::continuous, 8, 256}, engine);
  REQUIRE(run.block_size == 16);
  // A step of the run: the tables of the sequences running then, holding what it reserved.
  const auto peak = std::find_if(run.steps.begin(), run.steps.end(), [&](const EngineStep& s) {
    return s.start == run.peak_tables.time;
  });
  REQUIRE(peak != run.steps.end());
  CHECK(run.peak_tables.requests.size() == static_cast<std::size_t>(peak->running));
  REQUIRE(run.peak_tables.tables.size() == run.peak_tables.requests.size());
  std::size_t blocks = 0;
  int scattered = 0;
  for (const std::vector<int>& table : run.peak_tables.tables) {
    blocks += table.size();
    for (std::size_t c = 1; c < table.size(); ++c) scattered += table[c] != table[c - 1] + 1;
  }
  CHECK(blocks * 16 == peak->kv_reserved);
  CHECK(blocks == run.peak_tables.blocks);
  CHECK(scattered == run.peak_tables.scattered);
  // Requests finish and free their blocks, later ones take them: the tables the panel shows are
  // not runs of consecutive blocks, and not the first step's.
  CHECK(scattered > 0);
  CHECK(peak != run.steps.begin());
}

TEST_CASE("engine rejects requests it cannot serve", "[engine]") {
  SimEngine engine = h100_llama();
  Request text;
  text.prompt = "no tokenizer to count me";
  CHECK_THROWS_AS(run_sim({text}, {}, engine), Error);
  Request too_long;
  too_long.prompt_len = engine.config.seq_len + 1;
  CHECK_THROWS_AS(run_sim({too_long}, {}, engine), Error);
  Request zero;
  zero.prompt_len = 4;
  zero.max_tokens = 0;
  CHECK_THROWS_AS(run_sim({zero}, {}, engine), Error);
  Request ok;
  ok.prompt_len = 4;
  CHECK_THROWS_AS(run_sim({ok}, {Policy::continuous, 0, 16}, engine), Error);
}

TEST_CASE("comparisons serve one workload each way, in order, on the engine given", "[engine]") {
  ServingEngine engine;
  engine.sim = h100_llama();
  WorkloadSpec spec;
  spec.requests = 12;
  spec.rate = 20.0;
  const std::vector<Request> reqs = generate_workload(spec);
  const SchedulerConfig stat{Policy::static_batching, 4, 256}, cont{Policy::continuous, 4, 256};
  std::vector<Policy> served;
  const PolicyComparison p = compare_policies(
      reqs, {stat, cont}, engine, {0.5, 0.05},
      [&](const SchedulerConfig& c) { served.push_back(c.policy); });
  CHECK(served == std::vector<Policy>{Policy::static_batching, Policy::continuous});
  REQUIRE(p.runs.size() == 2);
  REQUIRE(p.metrics.size() == 2);
  CHECK(p.runs[1].scheduler.policy == Policy::continuous);
  CHECK(p.runs[1].steps.size() == run_sim(reqs, cont, *engine.sim).steps.size());
  CHECK(p.metrics[1].goodput == run_serving_metrics(p.runs[1], {0.5, 0.05}).goodput);
  CHECK(p.same_tokens);

  MemoryConfig memory;
  memory.block_size = 16;
  memory.budget_bytes = 4096 * kv_storage_bytes_per_token(engine.sim->config, DType::f32);
  const AllocatorComparison a =
      compare_allocators(reqs, cont, memory, {Allocator::contiguous, Allocator::paged}, engine);
  REQUIRE(a.runs.size() == 2);
  REQUIRE(a.memory.size() == 2);
  REQUIRE(a.metrics.size() == 2);
  CHECK(a.runs[0].allocator == "contiguous");
  CHECK(a.runs[1].allocator == "paged");
  CHECK(a.memory[1].block_size == 16);
  CHECK(a.memory[0].kv_bytes_budget == a.memory[1].kv_bytes_budget);
  CHECK(a.metrics[1].duration == a.runs[1].metrics.duration);
  CHECK(a.same_tokens);
}

TEST_CASE("a request the KV memory cannot hold is an error on kv_memory", "[engine]") {
  Request big;
  big.prompt_len = 500;
  big.max_tokens = 100;
  for (const Allocator allocator : {Allocator::contiguous, Allocator::paged}) {
    SimEngine engine = h100_llama();
    engine.memory.allocator = allocator;
    engine.memory.budget_bytes = 256 * kv_storage_bytes_per_token(engine.config, engine.kv_type);
    INFO(allocator_name(allocator));
    try {
      run_sim({big}, {}, engine);
      FAIL("no error");
    } catch (const ParameterError& e) {
      CHECK(e.parameter() == "kv_memory");
      CHECK_THAT(e.problem(), Catch::Matchers::Contains("request 0 needs"));
    }
  }
}

TEST_CASE("trace: Perfetto JSON has one span per phase and one per step, and files are written",
          "[engine]") {
  const SimEngine engine = h100_llama();
  WorkloadSpec spec;
  spec.requests = 12;
  spec.rate = 20.0;
  spec.prompt = parse_length_distribution("fixed:200");
  spec.output = parse_length_distribution("uniform:1:40");
  const auto reqs = generate_workload(spec);
  const EngineRun st = run_sim(reqs, {Policy::static_batching, 4, 128}, engine);
  const EngineRun co = run_sim(reqs, {Policy::continuous, 4, 128}, engine);

  // Round trip through text: what a viewer would read.
  const auto trace = nlohmann::json::parse(perfetto_trace({&st, &co}).dump());
  REQUIRE(trace.contains("traceEvents"));
  std::map<int, int> prefill_spans, decode_spans, step_spans, slot_names;
  std::map<int, std::string> process_names;
  for (const auto& e : trace["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "M" && e["name"] == "process_name") process_names[pid] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name") ++slot_names[pid];
    if (ph != "X") continue;
    CHECK(e["dur"].get<double>() >= 0.0);
    if (e["cat"] == "prefill") ++prefill_spans[pid];
    if (e["cat"] == "decode") ++decode_spans[pid];
    if (e["cat"] == "step") ++step_spans[pid];
  }
  CHECK(process_names[1] == "static (sim)");
  CHECK(process_names[2] == "continuous (sim)");
  int multi_token = 0;
  for (const Request& r : reqs) multi_token += r.max_tokens > 1;
  for (int pid : {1, 2}) {
    const EngineRun& run = pid == 1 ? st : co;
    CHECK(slot_names[pid] == 4 + 1);  // the slots and the scheduler's track
    CHECK(prefill_spans[pid] == 12);
    CHECK(decode_spans[pid] == multi_token);
    CHECK(step_spans[pid] == static_cast<int>(run.steps.size()));
  }

  const auto dir = std::filesystem::temp_directory_path() / "inferlab_test_engine";
  std::filesystem::create_directories(dir);
  const auto json_path = (dir / "trace.json").string(), svg_path = (dir / "gantt.svg").string();
  std::filesystem::remove(json_path);
  std::filesystem::remove(svg_path);
  write_perfetto_trace(json_path, {&st, &co});
  gantt_plot({&st, &co}, "test").save(svg_path);
  std::ifstream j(json_path), s(svg_path);
  CHECK(nlohmann::json::parse(j)["traceEvents"].size() == trace["traceEvents"].size());
  const std::string svg((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("r11") != std::string::npos);  // the last request's bar is labelled
  CHECK_THROWS_AS(write_perfetto_trace("/nonexistent/dir/t.json", {&st}), Error);
}

TEST_CASE("decode sweep: batched decode on the real forward pass", "[engine]") {
  const Model model = make_synthetic_model("stories260K");
  const DecodeThroughput one = measure_decode_throughput(model, 1, 8, 4);
  const DecodeThroughput four = measure_decode_throughput(model, 4, 8, 4);
  CHECK(one.step_seconds > 0.0);
  CHECK(four.tokens_per_second == Approx(4.0 / four.step_seconds));
  CHECK(four.tokens_per_second_per_sequence == Approx(1.0 / four.step_seconds));
  CHECK_THROWS_AS(measure_decode_throughput(model, 1, model.config().seq_len, 4), Error);
}

TEST_CASE("decode sweep: medians at 1..64 sequences and the ridge their ends imply", "[engine]") {
  const Model model = make_synthetic_model("stories260K");
  const DecodeSweep s = decode_throughput_sweep(model, 4, 2, 2, Device::cpu);
  REQUIRE(s.rows.size() == 7);
  CHECK(s.rows.front().batch == 1);
  CHECK(s.rows.back().batch == 64);
  CHECK(s.reps == 2);
  double widest = 0.0;
  for (const DecodeSweepRow& r : s.rows) {
    CHECK(r.step_seconds > 0.0);
    CHECK(r.step_spread >= 0.0);
    CHECK(r.tokens_per_second == Approx(r.batch / r.step_seconds));
    CHECK(r.tokens_per_second_per_sequence == Approx(1.0 / r.step_seconds));
    CHECK(r.vs_batch1 == Approx(r.tokens_per_second / s.rows.front().tokens_per_second));
    widest = std::max(widest, r.step_spread);
  }
  CHECK(s.max_spread == widest);
  CHECK(s.speedup_at_16 == s.rows[4].vs_batch1);
  const double params = static_cast<double>(model.config().n_params());
  CHECK(s.weight_bytes == model.bytes_read_per_token());  // float32: 4 bytes per weight
  CHECK(s.bytes_per_weight == Approx(4.0).epsilon(0.03));  // and the packing's padding
  CHECK(s.bandwidth == Approx(s.weight_bytes / s.rows.front().step_seconds));
  CHECK(s.flops == Approx(2.0 * params * 64 / s.rows.back().step_seconds));
  CHECK(s.ridge() == Approx(s.flops / s.bandwidth));
  CHECK(s.turnover_batch() == Approx(s.ridge() * s.bytes_per_weight / 2.0));
  CHECK(decode_throughput_sweep(model, 4, 2, 1, Device::cpu).too_noisy());  // one sample each
  CHECK_THROWS_AS(decode_throughput_sweep(model, model.config().seq_len, 2, 1, Device::cpu), Error);
}
