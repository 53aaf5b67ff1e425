#include "test_support.hpp"

// Tests of the hardware table and the roofline cost model (hardware.hpp, roofline.hpp): the
// worked example (Llama-3-8B on an H100 SXM: ~4.8 ms per batch-1 token, ~209 tokens/s, critical
// batch ~295-297, a 2,000-token prefill in ~32 ms), the intensities the chapter states, the
// step clock's properties, a quick measurement of this machine that must be plausible, and
// chapter 03's report (roofline_report.hpp): its rows, its plot points, the above-roof notes.

#include <cmath>
#include <limits>
#include <string>

#include "inferlab/base/error.hpp"
#include "inferlab/analysis/fma_peak.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/analysis/model_points.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/analysis/roofline_measure.hpp"
#include "inferlab/analysis/roofline_report.hpp"

using inferlab::CostOptions;
using inferlab::DType;
using inferlab::Error;
using inferlab::hardware_by_name;
using inferlab::named_config;
using inferlab::StepShape;

namespace {
CostOptions textbook() {
  CostOptions o;
  o.textbook_accounting = true;
  return o;
}
}  // namespace

TEST_CASE("hardware table: dense BF16 FLOP/s and bandwidth, ridge points", "[unit][roofline]") {
  const auto a100 = hardware_by_name("a100-sxm");
  const auto h100 = hardware_by_name("h100-sxm");
  const auto h200 = hardware_by_name("h200");
  CHECK(a100.peak_flops == 312e12);
  CHECK(a100.bandwidth == 2.0e12);
  CHECK(h100.peak_flops == 989e12);
  CHECK(h100.bandwidth == 3.35e12);
  CHECK(h200.peak_flops == 989e12);
  CHECK(h200.bandwidth == 4.8e12);
  CHECK(a100.ridge_point() == Approx(156.0));
  CHECK(h100.ridge_point() == Approx(295.22).epsilon(1e-4));
  CHECK(h200.ridge_point() < h100.ridge_point());  // same compute, more bandwidth
  for (const auto& h : inferlab::hardware_table()) {
    CHECK(h.dtype == "bf16");
    CHECK(h.peak_flops > 1e14);
    CHECK(h.bandwidth > 1e12);
    CHECK(h.memory_bytes >= 80e9);
    CHECK(!h.source.empty());
  }
  CHECK(inferlab::hardware_table().size() >= 4);
  CHECK(inferlab::hardware_names().back() == "this");
  try {
    hardware_by_name("tpu-v9");
    FAIL("no error for an unknown name");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("tpu-v9") != std::string::npos);
    CHECK(what.find("h100-sxm") != std::string::npos);  // lists the known names
    CHECK(what.find("this") != std::string::npos);
  }
}

TEST_CASE("linear-layer intensity ~ tokens in the batch (BF16)", "[unit][roofline]") {
  // The text's d x d layer: I = 2 B d^2 / (2 d^2 + 4 B d) = B d / (d + 2 B).
  for (int B : {1, 8, 64, 512, 2000}) {
    const auto op = inferlab::linear_cost("w", B, 4096, 4096, DType::bf16, DType::bf16);
    CHECK(op.flops == 2.0 * B * 4096.0 * 4096.0);
    CHECK(op.bytes == 2.0 * 4096 * 4096 + 4.0 * B * 4096);
    CHECK(op.intensity() == Approx(B * 4096.0 / (4096.0 + 2 * B)));
  }
  CHECK(inferlab::linear_cost("w", 1, 4096, 4096, DType::bf16, DType::bf16).intensity() ==
        Approx(1.0).epsilon(1e-3));
  // float32 weights halve it: the CPU engine's batch-1 decode is at ~0.5 FLOP/byte.
  CHECK(inferlab::linear_cost("w", 1, 4096, 4096, DType::f32, DType::f32).intensity() ==
        Approx(0.5).epsilon(1e-3));
  const auto ops = inferlab::linear_layer_costs(named_config("llama3-8b"), 64);
  REQUIRE(ops.size() == 8);
  // Within 10 % of B for every matrix; the narrow wk and wv (d = KV = 1024) deviate most,
  // because their activations weigh more next to their smaller weights.
  for (const auto& op : ops) CHECK(op.intensity() == Approx(64.0).epsilon(0.1));
}

TEST_CASE("decode attention: ~1 FLOP/byte for MHA in BF16, g times more with GQA",
          "[unit][roofline]") {
  const auto mha = named_config("llama2-7b");   // 32 KV heads: g = 1
  const auto gqa = named_config("llama3-70b");  // 64 query heads on 8 KV heads: g = 8
  CHECK(inferlab::decode_attention_intensity_limit(mha, DType::bf16) == 1.0);
  CHECK(inferlab::decode_attention_intensity_limit(gqa, DType::bf16) == 8.0);
  CHECK(inferlab::decode_attention_intensity_limit(named_config("llama3-8b"), DType::bf16) == 4.0);
  CHECK(inferlab::decode_attention_cost(mha, 4096).intensity() == Approx(1.0).epsilon(1e-3));
  CHECK(inferlab::decode_attention_cost(gqa, 4096).intensity() == Approx(8.0).epsilon(1e-2));
  // Batching does not help: B sequences read B caches. The step's attention part scales with B.
  const auto h100 = hardware_by_name("h100-sxm");
  const auto c = named_config("llama3-8b");
  const auto one = inferlab::step_cost(c, h100, StepShape{}.add_decode(4096));
  StepShape many;
  for (int b = 0; b < 64; ++b) many.add_decode(4096);
  const auto sixty_four = inferlab::step_cost(c, h100, many);
  CHECK(sixty_four.kv_bytes == 64 * one.kv_bytes);
  CHECK(sixty_four.weight_bytes == one.weight_bytes);  // the weights are shared
}

TEST_CASE("worked example (a): Llama-3-8B, H100 SXM, batch-1 decode ~4.8 ms, ~209 tokens/s",
          "[unit][roofline]") {
  const auto c = named_config("llama3-8b");
  const auto h100 = hardware_by_name("h100-sxm");
  // The text: every parameter read once, 8.0e9 x 2 bytes = 16 GB / 3.35 TB/s. The config holds
  // 8.03e9 parameters.
  const auto text = inferlab::decode_bound(c, h100, 1, 1, textbook());
  CHECK(text.step.weight_bytes == 2.0 * double(c.n_params()));
  CHECK(text.seconds == Approx(4.79e-3).epsilon(2e-3));
  CHECK(std::abs(text.seconds - 4.8e-3) < 0.05e-3);
  CHECK(text.tokens_per_second == Approx(208.6).epsilon(2e-3));  // ~209
  CHECK(text.step.memory_bound());
  // The arithmetic takes 0.016 ms of it: the ALUs idle ~99.7 % of the step.
  CHECK(1.0 - text.step.compute_seconds / text.seconds == Approx(0.997).margin(0.001));

  // Finer accounting: a step reads the embedding table only one row (it is indexed, not
  // multiplied), so 7.50e9 parameters are read: 4.48 ms, 223 tokens/s.
  const auto fine = inferlab::decode_bound(c, h100, 1, 1);
  CHECK(fine.step.weight_bytes == Approx(2.0 * 7.505e9).epsilon(1e-3));
  CHECK(fine.seconds == Approx(4.48e-3).epsilon(2e-3));
  CHECK(fine.seconds < text.seconds);
  // At 70-85 % of the bandwidth a real engine lands at ~5.3-6.4 ms.
  CostOptions real;
  real.bandwidth_utilisation = 0.75;
  CHECK(inferlab::decode_bound(c, h100, 1, 1, real).seconds == Approx(fine.seconds / 0.75));
}

TEST_CASE("worked example (b): critical batch ~295 (the text's rounding gives ~297)",
          "[unit][roofline]") {
  const auto c = named_config("llama3-8b");
  const auto h100 = hardware_by_name("h100-sxm");
  // B* = W P / (F BW) with W = 2 N bytes and F = 2 N FLOPs per token: P / BW, the ridge.
  const double text = inferlab::critical_batch_size(c, h100, 0, textbook());
  CHECK(text == Approx(989.0 / 3.35).epsilon(1e-9));
  CHECK(text == Approx(295.2).epsilon(1e-3));
  // The text rounds the step to 4.8 ms first: 4.8 ms x 989e12 / 1.6e10 = 296.7 ~ 297.
  CHECK(4.8e-3 * 989e12 / 1.6e10 == Approx(297.0).epsilon(0.002));
  // 8-bit weights halve the bytes: the crossover comes at half the batch.
  CostOptions fp8 = textbook();
  fp8.weight_dtype = DType::fp8;
  CHECK(inferlab::critical_batch_size(c, h100, 0, fp8) == Approx(text / 2).epsilon(1e-9));
  // Counting the activations each linear layer reads and writes moves it up (~331): at B ~ 300
  // the B x d inputs are no longer negligible next to the d x d weights.
  const double fine = inferlab::critical_batch_size(c, h100, 0);
  CHECK(fine > text);
  CHECK(fine == Approx(331.1).epsilon(2e-3));
  // With a KV cache every extra sequence brings its own bytes. Beyond a few hundred tokens of
  // context they outgrow what the FLOPs can cover, and decode never turns compute-bound.
  CHECK(inferlab::critical_batch_size(c, h100, 64) > fine);
  CHECK(std::isinf(inferlab::critical_batch_size(c, h100, 4096)));
  // The step time is nearly flat below B* (only the activations grow) and linear above it.
  const double t1 = inferlab::decode_bound(c, h100, 1, 0).seconds;
  CHECK(inferlab::decode_bound(c, h100, 100, 0).seconds == Approx(t1).epsilon(0.05));
  const auto at = inferlab::decode_bound(c, h100, 331, 0).step;
  CHECK(at.compute_seconds == Approx(at.memory_seconds).epsilon(0.002));
  CHECK(inferlab::decode_bound(c, h100, 662, 0).seconds == Approx(2 * at.seconds()).epsilon(0.002));
  CHECK(!inferlab::decode_bound(c, h100, 662, 0).step.memory_bound());
}

TEST_CASE("worked example (c): a 2,000-token prefill ~32 ms at peak, 55-80 ms at 40-60 %",
          "[unit][roofline]") {
  const auto c = named_config("llama3-8b");
  const auto h100 = hardware_by_name("h100-sxm");
  // The text: 2 x 8e9 x 2000 = 3.2e13 FLOPs / 989 TFLOP/s = 32.4 ms (8.03e9 parameters: 32.5).
  const double text = inferlab::prefill_seconds(c, h100, 2000, textbook());
  CHECK(text == Approx(2.0 * double(c.n_params()) * 2000 / 989e12));
  CHECK(std::abs(text - 32e-3) < 0.6e-3);
  // Finer: 7.50e9 multiplied parameters plus causal attention over the prompt: 31.4 ms.
  const double fine = inferlab::prefill_seconds(c, h100, 2000);
  CHECK(fine == Approx(31.4e-3).epsilon(3e-3));
  CostOptions half;
  half.flops_utilisation = 0.5;
  CHECK(inferlab::prefill_seconds(c, h100, 2000, half) == Approx(2 * fine));
  // At 50 % of the peak that is ~14 batch-1 decode steps of GPU time (the text: "~15"), for
  // ONE output token; at the peak, ~7.
  CHECK(inferlab::prefill_seconds(c, h100, 2000, half) /
            inferlab::decode_bound(c, h100, 1, 1).seconds ==
        Approx(14.0).epsilon(0.05));
  CHECK(!inferlab::step_cost(c, h100, StepShape{}.add_prefill(2000)).memory_bound());
}

TEST_CASE("step_time_seconds: the simulator's clock", "[unit][roofline]") {
  const auto c = named_config("llama3-8b");
  const auto h100 = hardware_by_name("h100-sxm");
  CHECK(inferlab::step_time_seconds(c, h100, StepShape{}) == 0.0);
  StepShape s;
  s.add_decode(100).add_decode(300).add_prefill(512, 128);
  CHECK(s.decode_tokens == 2);
  CHECK(s.prefill_tokens == 512);
  CHECK(s.tokens() == 514);
  CHECK(s.context_tokens == 100 + 300 + 128 + 512);
  CHECK(s.attended_pairs == 100 + 300 + 512 * 128 + 512 * 513 / 2);
  const auto cost = inferlab::step_cost(c, h100, s);
  CHECK(inferlab::step_time_seconds(c, h100, s) ==
        std::max(cost.compute_seconds, cost.memory_seconds));
  CHECK(cost.kv_bytes == double(s.context_tokens) * 131072.0);
  // Monotone: adding work never makes a step faster.
  StepShape more = s;
  more.add_decode(2000);
  CHECK(inferlab::step_time_seconds(c, h100, more) >= inferlab::step_time_seconds(c, h100, s));
  // A faster memory shortens a memory-bound step by exactly the bandwidth ratio.
  const auto h200 = hardware_by_name("h200");
  const StepShape decode = StepShape{}.add_decode(1000);
  CHECK(inferlab::step_time_seconds(c, h100, decode) /
            inferlab::step_time_seconds(c, h200, decode) ==
        Approx(4.8 / 3.35));
  CHECK_THROWS_AS(StepShape{}.add_decode(-1), Error);
}

TEST_CASE("the linear layer's critical batch solves the roofline exactly", "[unit][roofline]") {
  const auto h100 = hardware_by_name("h100-sxm");
  const double B = inferlab::linear_critical_batch(4096, 4096, h100, DType::bf16, DType::bf16);
  // I(B) = B d / (d + 2 B) = ridge  =>  B = ridge d / (d - 2 ridge).
  const double ridge = h100.ridge_point();
  CHECK(B == Approx(ridge * 4096 / (4096 - 2 * ridge)));
  const auto op = inferlab::linear_cost("w", 1, 4096, 4096, DType::bf16, DType::bf16);
  CHECK(inferlab::attainable_flops(h100, op.intensity()) == Approx(3.35e12 * op.intensity()));
  CHECK(inferlab::attainable_flops(h100, 1e4) == 989e12);
}

TEST_CASE("this machine, quickly measured: plausible roofs and kernel points", "[roofline][slow]") {
  auto options = inferlab::quick_measure_options();
  options.thread_counts = {1};
  const auto m = inferlab::measure_this_machine(options);
  REQUIRE(m.per_threads.size() == 1);
  const auto& h = m.hardware;
  CHECK(h.measured);
  CHECK(h.dtype == "fp32");
  // Units, not speed: bytes/s and FLOP/s (a GB/s or GFLOP/s slip would read ~10..1000). The
  // lower bounds are low enough for a Debug build under sanitizers (~0.1 GB/s measured there).
  CHECK(h.bandwidth > 1e7);
  CHECK(h.bandwidth < 1e13);
  CHECK(h.peak_flops > 1e7);
  CHECK(h.peak_flops < 1e14);
  // A batch-1 linear layer is memory-bound: it cannot beat the measured memory roof by much
  // (the cache helps a little; allow 2x) and sits far below the GEMM peak.
  const auto p = inferlab::measure_linear_point(1, 2048, 2048, 2);
  CHECK(p.intensity() == Approx(0.5).epsilon(1e-3));
  CHECK(p.flops_per_second() < h.peak_flops);
  const auto a = inferlab::measure_decode_attention_point(1024, 8, 2, 64, 2);
  CHECK(a.intensity() == Approx(2.0).epsilon(0.01));  // 2 g / 4 bytes with g = 4
  CHECK(a.seconds > 0.0);
  const auto sweep = inferlab::measure_critical_batch(512, 512, {1, 2, 4, 8}, 1);
  REQUIRE(sweep.rows.size() == 4);
  CHECK(sweep.asymptote_batch > 0.0);
}

TEST_CASE("forward_flops counts 2 per weight per token, the classifier per logit row, attention",
          "[roofline][unit]") {
  inferlab::ModelConfig c;
  c.dim = 4;
  c.hidden_dim = 6;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;  // kv_dim 2
  c.vocab_size = 10;
  c.seq_len = 8;
  // Per layer: wq, wo 4x4; wk, wv 2x4; w1, w2, w3 6x4: 16 + 16 + 8 + 8 + 72 = 120 weights.
  const double per_token = 2.0 * 2 * 120;
  // One token at position 0: attention over 1 position, 4 FLOPs x D x layers.
  CHECK(inferlab::forward_flops(c, 1, 0, 1) == per_token + 2.0 * 10 * 4 + 4.0 * 2 * 4 * 1);
  // Three tokens at positions 5, 6, 7 with no logits: 6 + 7 + 8 attended positions.
  CHECK(inferlab::forward_flops(c, 3, 5, 0) == 3 * per_token + 4.0 * 2 * 4 * (6 + 7 + 8));
}

TEST_CASE("measure_model_points: one prefill and one decode point per batch, plausible units",
          "[roofline][unit]") {
  const inferlab::Model model = inferlab::make_synthetic_model("stories260K");
  inferlab::ModelPointOptions o;
  o.prompt_tokens = 16;
  o.batches = {1, 3};
  o.decode_steps = 2;
  o.reps = 1;
  const auto m = inferlab::measure_model_points(model, o);
  CHECK(m.prefill.tokens == 16);
  CHECK(m.prefill.seconds > 0.0);
  CHECK(m.prefill.flops == inferlab::forward_flops(model.config(), 16, 0, 1));
  REQUIRE(m.batched.size() == 2);
  CHECK(m.batched[1].tokens == 3);
  CHECK(m.batched[1].seconds > 0.0);
  CHECK(m.batched[0].bytes >= double(model.config().bytes_read_per_token()));
  o.batches = {2, 4};
  REQUIRE_THROWS_WITH(inferlab::measure_model_points(model, o), Catch::Contains("start at 1"));
  o.batches = {1};
  o.prompt_tokens = model.config().seq_len + 1;
  REQUIRE_THROWS_WITH(inferlab::measure_model_points(model, o), Catch::Contains("outside 1.."));
}

TEST_CASE("the FMA peak probe reports FLOP/s in plausible units", "[roofline][unit]") {
  const auto r = inferlab::measure_fma_peak(1, 1);
  CHECK(r.threads == 1);
  CHECK((r.vector_width == 4 || r.vector_width == 8 || r.vector_width == 16));
  CHECK(r.flops > 1e7);   // even a Debug build under sanitizers
  CHECK(r.flops < 1e13);  // one core
}

TEST_CASE(
    "chapter 03's prediction: one intensity row per batch asked, verdicts, the worked example",
    "[unit][roofline]") {
  const auto c = named_config("llama3-8b");
  const auto h100 = hardware_by_name("h100-sxm");
  inferlab::RooflineRequest r;
  r.batch = 8;  // one of 1, 8, 64, 512: no extra row
  r.prompt_tokens = 2000;
  const auto p = inferlab::predict_roofline(c, h100, r);
  REQUIRE(p.linear.size() == 5);
  CHECK(p.linear[0].tokens == 1);
  CHECK(p.linear[4].tokens == 2000);
  CHECK(p.linear[0].memory_bound);   // one token: far below the ridge
  CHECK(!p.linear[4].memory_bound);  // a 2,000-token prompt: above it
  CHECK(p.linear[0].ops.size() == inferlab::linear_layer_costs(c, 1).size());
  CHECK(p.attention_context == 4096);  // context 0 asks for the default
  CHECK(p.attention_intensity_limit == Approx(2.0 * c.kv_group() / 2.0));
  CHECK(p.attention_intensity_mha == Approx(1.0));  // bf16 without GQA
  CHECK(p.decode.step.memory_bound());
  CHECK(p.decode_textbook.tokens_per_second == Approx(209).margin(3));
  CHECK(p.critical_textbook == Approx(295.2).margin(2));
  REQUIRE(p.critical_by_context.size() == 7);
  CHECK(p.critical_by_context.front().context == 0);
  CHECK(p.critical_by_context.front().critical_batch == p.critical_with_activations);
  CHECK(p.prefill_seconds_textbook == Approx(0.032).margin(0.002));
  CHECK(p.prefill_seconds == p.prefill_seconds_at_peak);  // utilisation 1
  CHECK(p.prefill_in_decode_steps ==
        Approx(p.prefill_seconds / inferlab::decode_bound(c, h100, 1, 0, p.cost).seconds));
  REQUIRE(p.memory_fit.has_value());
  CHECK(p.memory_fit->fits);

  r.batch = 3;  // not in the list: its own row, before the prompt's
  r.utilisation = 0.5;
  const auto q = inferlab::predict_roofline(c, h100, r);
  REQUIRE(q.linear.size() == 6);
  CHECK(q.linear[4].tokens == 3);
  CHECK(q.prefill_seconds > q.prefill_seconds_at_peak);

  r.utilisation = 0.0;
  REQUIRE_THROWS_AS(inferlab::predict_roofline(c, h100, r), Error);
  r.utilisation = 1.0;
  r.prompt_tokens = 0;
  REQUIRE_THROWS_AS(inferlab::predict_roofline(c, h100, r), Error);
}

TEST_CASE("chapter 03's report: names checked before anything runs, predicted plot points",
          "[unit][roofline]") {
  inferlab::RooflineRequest r;
  r.hardware = "no-such-gpu";
  REQUIRE_THROWS_AS(inferlab::roofline_report(r), Error);
  r.hardware = "h100-sxm";
  r.config = "no-such-model";
  REQUIRE_THROWS_AS(inferlab::roofline_report(r), Error);
  r.config = "llama3-8b";
  r.prompt_tokens = 100;
  const auto report = inferlab::roofline_report(r);
  CHECK(!report.measured);
  CHECK(report.above_roof.empty());
  CHECK(report.threads >= 1);
  REQUIRE(report.plot_points.size() == 4);  // decode B=1, B=64, the prefill, decode attention
  CHECK(report.plot_points[0].label == "decode B=1");
  CHECK(report.plot_points[2].label == "prefill 100 tokens");
  CHECK(report.plot_points[3].label == "decode attention g=4 (model)");
  for (const auto& point : report.plot_points) {
    CHECK(!point.measured);
    // A predicted point sits on the roof.
    CHECK(point.flops_per_second ==
          Approx(inferlab::attainable_flops(report.prediction.hardware, point.intensity)));
  }
}

TEST_CASE("measured points: each timed kernel beside its prediction, and the ones above the roof",
          "[unit][roofline]") {
  inferlab::Hardware hw;
  hw.peak_flops = 100e9;
  hw.bandwidth = 10e9;  // ridge at 10 FLOP/byte
  inferlab::MachineRoofline m;
  // 1 FLOP/byte: the roof is 10 GFLOP/s. 1e9 FLOPs in 0.05 s = 20 GFLOP/s: 100 % above it.
  m.linear.push_back({"linear B=1", 1e9, 1e9, 0.05});
  // 20 FLOP/byte: the roof is the peak, 100 GFLOP/s. 1e9 FLOPs in 0.1 s = 10 GFLOP/s: below.
  m.attention.push_back({"attention MHA S=8", 1e9, 5e7, 0.1});
  const auto above = inferlab::above_roof(m, hw);
  REQUIRE(above.size() == 1);
  CHECK(above[0].name == "linear B=1");
  CHECK(above[0].percent == Approx(100.0));

  inferlab::RooflinePrediction p;
  p.config = named_config("stories15M");
  p.hardware = hw;
  p.attention = inferlab::decode_attention_cost(p.config, 64, p.cost);
  const auto points = inferlab::roofline_points(p, &m, "stories15M", 64);
  REQUIRE(points.size() == 4);  // the linear layer predicted and measured, attention, attention
  CHECK(points[0].label == "linear B=1 (model)");
  CHECK(!points[0].measured);
  CHECK(points[0].flops_per_second == Approx(10e9));
  CHECK(points[1].measured);
  CHECK(points[1].flops_per_second == Approx(20e9));
  CHECK(points[2].label == "attention MHA S=8");
  CHECK(points[3].label.find("(model)") != std::string::npos);
}
