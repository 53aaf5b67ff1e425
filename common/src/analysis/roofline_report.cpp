// Chapter 03's result as data (see roofline_report.hpp).
#include "inferlab/analysis/roofline_report.hpp"

#include <omp.h>

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/units.hpp"

namespace inferlab {

namespace {

// Whole-model points are measured for configurations up to this many bytes of weights
// (stories110M is 0.44 GB; Llama-3-8B, 32 GB, stays a prediction) and above the last-level cache.
constexpr double kModelPointsMaxBytes = 2e9;

// Checked before any measurement, so a bad request never waits for one.
void check_request(const RooflineRequest& r) {
  if (r.batch < 1) throw Error("roofline: the batch must be >= 1");
  if (r.prompt_tokens < 1) throw Error("roofline: the prompt must have at least one token");
  if (r.context < 0) throw Error("roofline: the context must be >= 0");
  if (!(r.utilisation > 0.0 && r.utilisation <= 1.0))
    throw Error("roofline: the utilisation must be in (0, 1]");
}

// The whole model's points, or why there are none: a model too big to build here stays a
// prediction; one whose weights fit the last-level cache would decode from the cache, above the
// memory roof.
void measure_model(const ModelConfig& c, const std::string& name, bool quick,
                   const std::function<void(const std::string&)>& progress, MachineRoofline& m) {
  const double model_bytes = double(c.n_params()) * sizeof(float);
  const double cache_bytes = double(last_level_cache_bytes());
  if (model_bytes > kModelPointsMaxBytes) {
    m.model_note = fmt::format(
        "{}'s {} of weights are too many to build here: the model stays "
        "a prediction",
        name, format_bytes(model_bytes));
    return;
  }
  if (model_bytes < cache_bytes) {
    m.model_note = fmt::format(
        "{}'s {} of weights fit in the {} last-level cache: timed, its "
        "decode would sit above the memory roof, so it is not placed on it",
        name, format_bytes(model_bytes), format_bytes(cache_bytes));
    return;
  }
  if (progress) progress(fmt::format("building a random-weight {} to time the whole model", name));
  const Model model = make_synthetic_model(name);
  ModelPointOptions mpo;
  mpo.prompt_tokens = std::min(quick ? 64 : 512, c.seq_len);
  mpo.batches = quick ? std::vector<int>{1, 8} : std::vector<int>{1, 4, 16, 64};
  mpo.decode_steps = quick ? 2 : 8;
  mpo.reps = quick ? 1 : 3;
  mpo.progress = progress;
  m.model = measure_model_points(model, mpo);
}

}  // namespace

RooflinePrediction predict_roofline(const ModelConfig& c, const Hardware& hw,
                                    const RooflineRequest& r) {
  check_request(r);
  RooflinePrediction p;
  p.config = c;
  p.hardware = hw;
  p.cost = cost_options_for(hw);
  p.batch = r.batch;
  p.context = r.context;
  p.prompt_tokens = r.prompt_tokens;
  p.utilisation = r.utilisation;
  CostOptions textbook = p.cost;
  textbook.textbook_accounting = true;
  CostOptions at_utilisation = p.cost;
  at_utilisation.flops_utilisation = r.utilisation;

  std::vector<int> tokens = {1, 8, 64, 512};
  if (std::find(tokens.begin(), tokens.end(), r.batch) == tokens.end()) tokens.push_back(r.batch);
  tokens.push_back(r.prompt_tokens);
  for (int t : tokens) {
    LinearIntensityRow row{t, linear_layer_costs(c, t, p.cost), true};
    double flops = 0.0, bytes = 0.0;  // the whole set, for the verdict
    for (const OpCost& op : row.ops) flops += op.flops, bytes += op.bytes;
    row.memory_bound = flops / bytes < hw.ridge_point();
    p.linear.push_back(std::move(row));
  }

  p.attention_context = r.context > 0 ? r.context : 4096;
  p.attention = decode_attention_cost(c, p.attention_context, p.cost);
  p.attention_intensity_limit = decode_attention_intensity_limit(c, p.cost.kv_dtype);
  p.attention_intensity_mha = 2.0 / dtype_bytes(p.cost.kv_dtype);

  p.decode = decode_bound(c, hw, r.batch, r.context, p.cost);
  p.decode_textbook = decode_bound(c, hw, 1, 0, textbook);
  p.critical_textbook = critical_batch_size(c, hw, 0, textbook);
  p.critical_with_activations = critical_batch_size(c, hw, 0, p.cost);
  for (std::int64_t ctx : {0, 128, 256, 512, 1024, 4096, 32768})
    p.critical_by_context.push_back({ctx, critical_batch_size(c, hw, ctx, p.cost)});

  p.prefill_seconds_at_peak = prefill_seconds(c, hw, r.prompt_tokens, p.cost);
  p.prefill_seconds = prefill_seconds(c, hw, r.prompt_tokens, at_utilisation);
  p.prefill_seconds_textbook = prefill_seconds(c, hw, r.prompt_tokens, textbook);
  p.prefill_in_decode_steps = p.prefill_seconds / decode_bound(c, hw, 1, 0, p.cost).seconds;
  // The bound is a time for memory the device must hold: say when it cannot.
  if (hw.memory_bytes > 0.0)
    p.memory_fit =
        memory_fit(c, p.cost.weight_dtype, p.cost.kv_dtype, r.batch, r.context, hw.memory_bytes);
  return p;
}

MachineRoofline measure_machine_roofline(const ModelConfig& c, const std::string& config_name,
                                         bool quick,
                                         const std::function<void(const std::string&)>& progress) {
  MachineRoofline m;
  MeasureOptions mo = quick ? quick_measure_options() : MeasureOptions{};
  const int max_threads = omp_get_max_threads();
  for (int t = 1; t < max_threads; t *= 2) mo.thread_counts.push_back(t);
  mo.thread_counts.push_back(max_threads);
  mo.progress = progress;
  m.machine = measure_this_machine(mo);
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };

  // A 4096 x 4096 float32 layer (64 MiB, Llama-3-8B's wq) is well above a typical last-level
  // cache, so its batch-1 time is a memory time. quick: 3072 x 4096, 48 MiB.
  m.n_in = 4096;
  m.d_out = quick ? 3072 : 4096;
  const int reps = quick ? 2 : 3;
  for (int b : {1, 8, 64, 512}) {
    say(fmt::format("timing matmul_packed as a {} x {} linear layer at batch {}", m.d_out, m.n_in, b));
    m.linear.push_back(measure_linear_point(b, m.n_in, m.d_out, reps));
  }
  // Decode attention with this configuration's heads, and the same without GQA (Nkv = Nh).
  const int context = quick ? 2048 : 8192;
  say(fmt::format("timing attention_cpu: one decode token over {} cached positions", context));
  m.attention.push_back(
      measure_decode_attention_point(context, c.n_heads, c.n_kv_heads, c.head_size(), reps + 2));
  if (c.n_kv_heads != c.n_heads)
    m.attention.push_back(
        measure_decode_attention_point(context, c.n_heads, c.n_heads, c.head_size(), reps + 2));

  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  if (!quick) batches.push_back(512);
  m.sweep = measure_critical_batch(m.n_in, m.d_out, batches, reps, progress);
  m.formula_batch =
      linear_critical_batch(m.n_in, m.d_out, m.machine.hardware, DType::f32, DType::f32);
  // matmul_packed does not reach the FMA peak: its own compute roof is the best it did in the sweep.
  for (const auto& row : m.sweep.rows)
    m.kernel_peak_flops =
        std::max(m.kernel_peak_flops, 2.0 * m.n_in * m.d_out * row.batch / row.seconds);
  Hardware kernel_roof = m.machine.hardware;
  kernel_roof.peak_flops = m.kernel_peak_flops;
  m.kernel_formula_batch =
      linear_critical_batch(m.n_in, m.d_out, kernel_roof, DType::f32, DType::f32);

  measure_model(c, config_name, quick, progress, m);
  return m;
}

std::vector<AboveRoof> above_roof(const MachineRoofline& m, const Hardware& hw) {
  // A kernel cannot beat its roof. A point above it means the roof was measured low (a noisy
  // bandwidth or FMA probe on a busy machine) or the kernel's data sat in a cache the probe did
  // not use.
  std::vector<AboveRoof> out;
  for (const std::vector<MeasuredPoint>* group : {&m.linear, &m.attention})
    for (const MeasuredPoint& p : *group) {
      const double over = p.flops_per_second() / attainable_flops(hw, p.intensity());
      if (over > 1.05) out.push_back({p.name, 100.0 * (over - 1.0)});
    }
  return out;
}

std::vector<RooflinePoint> roofline_points(const RooflinePrediction& p,
                                           const MachineRoofline* measured,
                                           const std::string& config_name, int prompt_tokens) {
  const Hardware& hw = p.hardware;
  const ModelConfig& c = p.config;
  std::vector<RooflinePoint> points;
  if (measured) {
    // The model's prediction for exactly the kernels that were timed, and what they did.
    for (const MeasuredPoint& m : measured->linear) {
      points.push_back(
          {m.name + " (model)", m.intensity(), attainable_flops(hw, m.intensity()), false});
      points.push_back({m.name, m.intensity(), m.flops_per_second(), true});
    }
    for (const MeasuredPoint& m : measured->attention)
      points.push_back({m.name, m.intensity(), m.flops_per_second(), true});
    if (measured->model) {
      const ModelPoints& mp = *measured->model;
      points.push_back({config_name + " " + mp.prefill.name, mp.prefill.intensity(),
                        mp.prefill.flops_per_second(), true});
      for (const ModelPoint& m : mp.batched)
        points.push_back({config_name + " " + m.name, m.intensity(), m.flops_per_second(), true});
    }
  } else {
    auto w1_intensity = [&](int tokens) {
      return linear_cost("", tokens, c.dim, c.hidden_dim, p.cost.weight_dtype,
                         p.cost.activation_dtype)
          .intensity();
    };
    for (int b : {1, 64}) {
      const double i = w1_intensity(b);
      points.push_back({fmt::format("decode B={}", b), i, attainable_flops(hw, i), false});
    }
    const double i = w1_intensity(prompt_tokens);
    points.push_back(
        {fmt::format("prefill {} tokens", prompt_tokens), i, attainable_flops(hw, i), false});
  }
  const double ia = p.attention.intensity();
  points.push_back({fmt::format("decode attention g={} (model)", c.kv_group()), ia,
                    attainable_flops(hw, ia), false});
  return points;
}

RooflineReport roofline_report(const RooflineRequest& r) {
  check_request(r);
  const ModelConfig c = named_config(r.config);
  RooflineReport report;
  report.config_name = r.config;
  Hardware hw;
  if (r.hardware == "this") {
    report.measured = measure_machine_roofline(c, r.config, r.quick, r.progress);
    hw = report.measured->machine.hardware;
    report.above_roof = above_roof(*report.measured, hw);
  } else {
    hw = hardware_by_name(r.hardware);
  }
  report.prediction = predict_roofline(c, hw, r);
  report.plot_points = roofline_points(
      report.prediction, report.measured ? &*report.measured : nullptr, r.config, r.prompt_tokens);
  report.threads = omp_get_max_threads();
  return report;
}

}  // namespace inferlab
