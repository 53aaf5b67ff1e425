// Chapter 03: the roofline.
//
// For a model configuration and a machine, prints what the roofline model predicts: the
// arithmetic intensity of every linear layer against the number of tokens in the batch, the
// intensity of decode attention, the ridge point, the decode step time and tokens/s bound, the
// critical batch size, and the prefill time. With --hardware this it then measures this
// machine (bandwidth, FMA peak and Eigen's GEMM per thread count), times the core's real
// kernels (a linear layer at batch 1/8/64/512, decode attention over a long context) and, for a
// model small enough to build here, the whole model (prefill, decode at several batch sizes),
// places them on the measured roofline, and finds the critical batch empirically, beside the
// formula. All the logic lives in common/ (hardware, kv_calc, roofline, model_points, svg);
// this file only wires and prints.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/app/plots.hpp"
#include "inferlab/app/chapter_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/analysis/model_points.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/app/svg.hpp"

using namespace inferlab;
using json = nlohmann::json;

namespace {

struct Options {
  std::string config = "llama3-8b", hardware = "h100-sxm", plot;
  int batch = 1, prompt_tokens = 2000, threads = 0;
  std::int64_t context = 0;
  double utilisation = 1.0;
  bool json = false, quick = false;
};

// Whole-model points are measured for configurations up to this many bytes of weights
// (stories110M is 0.44 GB; Llama-3-8B, 32 GB, stays a prediction) and above the last-level cache.
constexpr double kModelPointsMaxBytes = 2e9;

// JSON has no infinity: a critical batch that does not exist is null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string batch_text(double b) {
  return std::isfinite(b) ? fmt::format("{:.0f}", b) : std::string("none (never compute-bound)");
}

void progress(const std::string& line) {
  std::fprintf(stderr, "[ch03] %s\n", line.c_str());
  std::fflush(stderr);
}

// What the measurements on this machine found.
struct Measured {
  MachineMeasurement machine;
  int n_in = 0, d_out = 0;                  // the linear layer timed
  std::vector<MeasuredPoint> linear;        // batch 1, 8, 64, 512
  std::vector<MeasuredPoint> attention;     // GQA (the config's heads) and MHA
  EmpiricalCriticalBatch sweep;
  double formula_batch = 0.0;               // linear_critical_batch on the measured roofs
  double kernel_peak_flops = 0.0;           // matmul_cpu's best FLOP/s in the sweep
  double kernel_formula_batch = 0.0;        // the same formula with that as the compute roof
  std::optional<ModelPoints> model;         // the whole model, when its weights fit in memory
  std::string model_note;                   // why it was not measured, when it was not
};

Measured measure(const Options& o, const ModelConfig& c) {
  Measured m;
  MeasureOptions mo = o.quick ? quick_measure_options() : MeasureOptions{};
  const int max_threads = omp_get_max_threads();
  for (int t = 1; t < max_threads; t *= 2) mo.thread_counts.push_back(t);
  mo.thread_counts.push_back(max_threads);
  mo.progress = progress;
  m.machine = measure_this_machine(mo);

  // A 4096 x 4096 float32 layer (64 MiB, Llama-3-8B's wq) is well above a typical last-level
  // cache, so its batch-1 time is a memory time. --quick: 3072 x 4096, 48 MiB.
  m.n_in = 4096;
  m.d_out = o.quick ? 3072 : 4096;
  const int reps = o.quick ? 2 : 3;
  for (int b : {1, 8, 64, 512}) {
    progress(fmt::format("timing matmul_cpu as a {} x {} linear layer at batch {}", m.d_out, m.n_in, b));
    m.linear.push_back(measure_linear_point(b, m.n_in, m.d_out, reps));
  }
  // Decode attention with this configuration's heads, and the same without GQA (Nkv = Nh).
  const int context = o.quick ? 2048 : 8192;
  progress(fmt::format("timing attention_cpu: one decode token over {} cached positions", context));
  m.attention.push_back(measure_decode_attention_point(context, c.n_heads, c.n_kv_heads,
                                                       c.head_size(), reps + 2));
  if (c.n_kv_heads != c.n_heads)
    m.attention.push_back(
        measure_decode_attention_point(context, c.n_heads, c.n_heads, c.head_size(), reps + 2));

  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  if (!o.quick) batches.push_back(512);
  m.sweep = measure_critical_batch(m.n_in, m.d_out, batches, reps, progress);
  m.formula_batch = linear_critical_batch(m.n_in, m.d_out, m.machine.hardware, DType::f32, DType::f32);
  // matmul_cpu does not reach the FMA peak: its own compute roof is the best it did in the sweep.
  for (const auto& r : m.sweep.rows)
    m.kernel_peak_flops = std::max(m.kernel_peak_flops, 2.0 * m.n_in * m.d_out * r.batch / r.seconds);
  Hardware kernel_roof = m.machine.hardware;
  kernel_roof.peak_flops = m.kernel_peak_flops;
  m.kernel_formula_batch = linear_critical_batch(m.n_in, m.d_out, kernel_roof, DType::f32, DType::f32);

  // The whole model (random weights of this shape) when it is small enough to build here: its
  // decode, prefill and batched decode go on the same plot as the kernels.
  const double model_bytes = double(c.n_params()) * sizeof(float);
  if (model_bytes > kModelPointsMaxBytes) {
    m.model_note = fmt::format("{}'s {} of weights are too many to build here: the model stays "
                               "a prediction", o.config, format_bytes(model_bytes));
  } else if (model_bytes < double(last_level_cache_bytes())) {
    // Decode would read the weights from the cache and sit above the (memory) roof.
    m.model_note = fmt::format("{}'s {} of weights fit in the {} last-level cache: timed, its "
                               "decode would sit above the memory roof, so it is not placed on it",
                               o.config, format_bytes(model_bytes),
                               format_bytes(double(last_level_cache_bytes())));
  } else {
    progress(fmt::format("building a random-weight {} to time the whole model", o.config));
    const Model model = make_synthetic_model(o.config);
    ModelPointOptions mpo;
    mpo.prompt_tokens = std::min(o.quick ? 64 : 512, c.seq_len);
    mpo.batches = o.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 4, 16, 64};
    mpo.decode_steps = o.quick ? 2 : 8;
    mpo.reps = o.quick ? 1 : 3;
    mpo.progress = progress;
    m.model = measure_model_points(model, mpo);
  }
  return m;
}

json op_json(const OpCost& op) {
  return {{"name", op.name}, {"flops", op.flops}, {"bytes", op.bytes}, {"intensity", op.intensity()}};
}

json point_json(const MeasuredPoint& p, const Hardware& h) {
  return {{"name", p.name},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"seconds", p.seconds},
          {"intensity", p.intensity()},
          {"flops_per_second", p.flops_per_second()},
          {"bytes_per_second", p.bytes_per_second()},
          {"attainable_flops_per_second", attainable_flops(h, p.intensity())}};
}

int run(const Options& o) {
  // Every flag is checked before any measurement: their validators bound the numbers; what is
  // left is names, paths and the flags that only mean something for --hardware this.
  const bool measuring = o.hardware == "this";
  if (!measuring && o.quick) throw Error("--quick applies only to --hardware this");
  if (!measuring && o.threads > 0) throw Error("--threads applies only to --hardware this");
  if (!o.plot.empty()) require_writable_output(o.plot, "--plot");
  if (o.threads > 0) omp_set_num_threads(o.threads);
  if (o.batch < 1) throw Error("--batch must be >= 1");
  if (o.prompt_tokens < 1) throw Error("--prompt-tokens must be >= 1");
  if (o.context < 0) throw Error("--context must be >= 0");
  if (!(o.utilisation > 0.0 && o.utilisation <= 1.0)) throw Error("--utilisation must be in (0, 1]");

  const ModelConfig c = named_config(o.config);
  if (!measuring) hardware_by_name(o.hardware);  // an unknown name fails here, not later
  std::optional<Measured> measured;
  Hardware hw;
  if (o.hardware == "this") {
    measured = measure(o, c);
    hw = measured->machine.hardware;
  } else {
    hw = hardware_by_name(o.hardware);
  }
  const CostOptions cost = cost_options_for(hw);
  CostOptions textbook = cost;
  textbook.textbook_accounting = true;
  CostOptions at_util = cost;
  at_util.flops_utilisation = o.utilisation;
  const double bytes_w = dtype_bytes(cost.weight_dtype);

  // --- the calculator ---
  std::vector<int> batches = {1, 8, 64, 512};
  if (o.batch != 1 && o.batch != 8 && o.batch != 64 && o.batch != 512) batches.push_back(o.batch);
  batches.push_back(o.prompt_tokens);
  const std::int64_t attention_context = o.context > 0 ? o.context : 4096;
  const OpCost attention = decode_attention_cost(c, attention_context, cost);
  const DecodeBound decode = decode_bound(c, hw, o.batch, o.context, cost);
  const DecodeBound decode_text = decode_bound(c, hw, 1, 0, textbook);
  const double critical_text = critical_batch_size(c, hw, 0, textbook);
  const double critical_fine = critical_batch_size(c, hw, 0, cost);
  const std::vector<std::int64_t> contexts = {0, 128, 256, 512, 1024, 4096, 32768};
  const double prefill_peak = prefill_seconds(c, hw, o.prompt_tokens, cost);
  const double prefill_util = prefill_seconds(c, hw, o.prompt_tokens, at_util);
  const double prefill_text = prefill_seconds(c, hw, o.prompt_tokens, textbook);
  // The bound is a time for memory the device must hold: say when it cannot.
  const std::optional<MemoryFit> fit =
      hw.memory_bytes > 0.0 ? std::optional<MemoryFit>(memory_fit(c, cost.weight_dtype, cost.kv_dtype,
                                                                   o.batch, o.context, hw.memory_bytes))
                            : std::nullopt;

  // --- the plot ---
  if (!o.plot.empty()) {
    std::vector<RooflinePoint> points;
    if (measured) {
      // The model's prediction for exactly the kernels that were timed, and what they did.
      for (const MeasuredPoint& p : measured->linear) {
        points.push_back({p.name + " (model)", p.intensity(), attainable_flops(hw, p.intensity()), false});
        points.push_back({p.name, p.intensity(), p.flops_per_second(), true});
      }
      for (const MeasuredPoint& p : measured->attention)
        points.push_back({p.name, p.intensity(), p.flops_per_second(), true});
      if (measured->model) {
        const ModelPoints& mp = *measured->model;
        points.push_back({o.config + " " + mp.prefill.name, mp.prefill.intensity(),
                          mp.prefill.flops_per_second(), true});
        for (const ModelPoint& p : mp.batched)
          points.push_back({o.config + " " + p.name, p.intensity(), p.flops_per_second(), true});
      }
    } else {
      for (int b : {1, 64}) {
        const double i = linear_cost("", b, c.dim, c.hidden_dim, cost.weight_dtype, cost.activation_dtype).intensity();
        points.push_back({fmt::format("decode B={}", b), i, attainable_flops(hw, i), false});
      }
      const double ip = linear_cost("", o.prompt_tokens, c.dim, c.hidden_dim, cost.weight_dtype, cost.activation_dtype).intensity();
      points.push_back({fmt::format("prefill {} tokens", o.prompt_tokens), ip, attainable_flops(hw, ip), false});
    }
    const double ia = attention.intensity();
    points.push_back({fmt::format("decode attention g={} (model)", c.kv_group()), ia, attainable_flops(hw, ia), false});
    roofline_plot(hw, points, fmt::format("Roofline of {} ({}), {}", hw.name, hw.dtype, o.config)).save(o.plot);
  }

  if (o.json) {
    json linear = json::array();
    for (int b : batches) {
      json ops = json::array();
      for (const OpCost& op : linear_layer_costs(c, b, cost)) ops.push_back(op_json(op));
      linear.push_back({{"tokens", b}, {"ops", ops}});
    }
    json by_context = json::array();
    for (std::int64_t ctx : contexts)
      by_context.push_back({{"context", ctx}, {"critical_batch", finite_or_null(critical_batch_size(c, hw, ctx, cost))}});
    json out = {
        {"chapter", "03_roofline"},
        {"config", o.config},
        {"hardware",
         {{"name", hw.name}, {"description", hw.description}, {"dtype", hw.dtype},
          {"peak_flops", hw.peak_flops}, {"bandwidth_bytes_per_s", hw.bandwidth},
          {"memory_bytes", hw.memory_bytes}, {"measured", hw.measured}, {"source", hw.source}}},
        {"threads", omp_get_max_threads()},
        {"weight_dtype", dtype_name(cost.weight_dtype)},
        {"ridge_point", hw.ridge_point()},
        {"linear_intensity", linear},
        {"decode_attention",
         {{"context", attention_context}, {"intensity", attention.intensity()},
          {"intensity_limit", decode_attention_intensity_limit(c, cost.kv_dtype)},
          {"gqa_group", c.kv_group()}}},
        {"memory_fit",
         fit ? json{{"fits", fit->fits}, {"needed_bytes", fit->needed_bytes},
                    {"weight_bytes", fit->weight_bytes}, {"kv_bytes", fit->kv_bytes},
                    {"device_bytes", fit->device_bytes}, {"message", memory_fit_message(*fit)}}
             : json(nullptr)},
        {"decode_bound",
         {{"batch", o.batch}, {"context", o.context}, {"seconds_per_step", decode.seconds},
          {"tokens_per_second", decode.tokens_per_second},
          {"tokens_per_second_per_sequence", decode.tokens_per_second_per_sequence},
          {"memory_bound", decode.step.memory_bound()}, {"weight_bytes", decode.step.weight_bytes},
          {"kv_bytes", decode.step.kv_bytes}, {"flops", decode.step.flops}}},
        {"critical_batch",
         {{"formula", "B* = W / (F * BW / P - K); weights only: (bytes per weight / 2) * P / BW"},
          {"weights_only", finite_or_null(critical_text)},
          {"with_activations", finite_or_null(critical_fine)},
          {"by_context", by_context}}},
        {"prefill",
         {{"tokens", o.prompt_tokens}, {"seconds_at_peak", prefill_peak},
          {"utilisation", o.utilisation}, {"seconds", prefill_util}}},
        {"textbook",
         {{"decode_seconds_per_token", decode_text.seconds},
          {"tokens_per_second", decode_text.tokens_per_second},
          {"critical_batch", critical_text}, {"prefill_seconds", prefill_text}}},
        {"measured", nullptr}};
    if (measured) {
      json rows = json::array(), linear_points = json::array(), attention_points = json::array(), sweep = json::array();
      for (const ThreadMeasurement& r : measured->machine.per_threads)
        rows.push_back({{"threads", r.threads}, {"read_bytes_per_s", r.read_bandwidth}, {"gemm_flops", r.gemm_flops}, {"fma_flops", r.fma_flops}});
      for (const MeasuredPoint& p : measured->linear) linear_points.push_back(point_json(p, hw));
      for (const MeasuredPoint& p : measured->attention) attention_points.push_back(point_json(p, hw));
      for (const auto& r : measured->sweep.rows)
        sweep.push_back({{"batch", r.batch}, {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second}});
      out["measured"] = {
          {"per_threads", rows},
          {"linear_shape", {measured->d_out, measured->n_in}},
          {"linear", linear_points},
          {"attention", attention_points},
          {"critical_batch",
           {{"sweep", sweep}, {"empirical_asymptotes", measured->sweep.asymptote_batch},
            {"empirical_knee", measured->sweep.knee_batch},
            {"formula", finite_or_null(measured->formula_batch)},
            {"kernel_peak_flops", measured->kernel_peak_flops},
            {"formula_kernel_roof", finite_or_null(measured->kernel_formula_batch)}}},
          {"model", nullptr}};
      if (measured->model) {
        json model_points = json::array();
        auto add = [&](const ModelPoint& p) {
          model_points.push_back({{"name", p.name}, {"tokens", p.tokens}, {"flops", p.flops},
                                  {"bytes", p.bytes}, {"seconds", p.seconds},
                                  {"tokens_per_second", p.tokens_per_second()},
                                  {"intensity", p.intensity()},
                                  {"flops_per_second", p.flops_per_second()},
                                  {"attainable_flops_per_second", attainable_flops(hw, p.intensity())}});
        };
        add(measured->model->prefill);
        for (const ModelPoint& p : measured->model->batched) add(p);
        out["measured"]["model"] = model_points;
      } else {
        out["measured"]["model_note"] = measured->model_note;
      }
    }
    std::cout << out.dump(1) << '\n';
    return 0;
  }

  // --- the text report ---
  std::printf("InferLab chapter 03: the roofline\n");
  std::printf("model:     %s: dim %d, hidden %d, %d layers, %d heads / %d KV heads (g = %d), "
              "%.2fB params\n",
              o.config.c_str(), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
              c.kv_group(), c.n_params() / 1e9);
  std::printf("hardware:  %s (%s)\n", hw.name.c_str(), hw.description.c_str());
  std::printf("           peak %.4g TFLOP/s dense %s, bandwidth %.4g GB/s -> ridge point I* = %.1f "
              "FLOP/byte\n",
              hw.peak_flops / 1e12, hw.dtype.c_str(), hw.bandwidth / 1e9, hw.ridge_point());
  std::printf("           source: %s\n", hw.source.c_str());
  std::printf("formats:   weights, activations and KV in %s (%g bytes per number)\n\n",
              dtype_name(cost.weight_dtype), bytes_w);

  if (measured) {
    std::printf("this machine, per thread count:\n  %7s  %14s  %16s  %16s\n", "threads", "read GB/s",
                "FMA GFLOP/s", "Eigen GFLOP/s");
    for (const ThreadMeasurement& r : measured->machine.per_threads)
      std::printf("  %7d  %14.2f  %16.2f  %16.2f\n", r.threads, r.read_bandwidth / 1e9,
                  r.fma_flops / 1e9, r.gemm_flops / 1e9);
    std::printf("\n");
  }

  std::printf("linear layers: arithmetic intensity (FLOP/byte) vs tokens in the batch\n  %8s",
              "tokens");
  for (const OpCost& op : linear_layer_costs(c, 1, cost)) std::printf("  %10s", op.name.c_str());
  std::printf("  %s\n", "bound");
  for (int b : batches) {
    std::printf("  %8d", b);
    double flops = 0.0, bytes = 0.0;  // the whole set, for the verdict
    for (const OpCost& op : linear_layer_costs(c, b, cost)) {
      std::printf("  %10.1f", op.intensity());
      flops += op.flops;
      bytes += op.bytes;
    }
    std::printf("  %s\n", flops / bytes < hw.ridge_point() ? "memory" : "compute");
  }
  std::printf("  ~%g x tokens in the batch: the weights are read once and used by every token.\n\n",
              2.0 / bytes_w);

  std::printf("decode attention over %lld cached tokens: %.2f FLOP/byte (limit 2g/bytes = %.2f; "
              "without GQA it would be %.2f)\n",
              static_cast<long long>(attention_context), attention.intensity(),
              decode_attention_intensity_limit(c, cost.kv_dtype), 2.0 / dtype_bytes(cost.kv_dtype));
  std::printf("  at any batch size: each sequence reads its own KV cache, nothing is shared.\n\n");

  std::printf("decode, batch %d, context %lld: %.3f ms per step -> %.1f tokens/s in all, %.1f "
              "tokens/s per sequence (%s-bound)\n",
              o.batch, static_cast<long long>(o.context), decode.seconds * 1e3, decode.tokens_per_second,
              decode.tokens_per_second_per_sequence, decode.step.memory_bound() ? "memory" : "compute");
  std::printf("  bytes per step: weights %s, KV %s; FLOPs %.3g (arithmetic would take %.3f ms)\n",
              format_bytes(decode.step.weight_bytes).c_str(), format_bytes(decode.step.kv_bytes).c_str(),
              decode.step.flops, decode.step.compute_seconds * 1e3);
  std::printf("  the worked example's accounting (every parameter read, batch 1): %.3f ms, %.1f tokens/s\n",
              decode_text.seconds * 1e3, decode_text.tokens_per_second);
  if (fit) {
    std::printf("  memory on one %s: %s%s\n", hw.name.c_str(), memory_fit_message(*fit).c_str(),
                fit->fits ? "" : ": the time above is for a device that does not exist (split the "
                                 "model over several, or shrink the batch or context)");
  }
  std::printf("\n");

  std::printf("critical batch (decode turns compute-bound): B* = W / (F*BW/P - K)\n");
  std::printf("  weights only, B* = (bytes per weight / 2) x P / BW:   %.1f\n", critical_text);
  std::printf("  counting the activations each layer reads and writes: %.1f\n", critical_fine);
  for (std::int64_t ctx : contexts)
    if (ctx > 0)
      std::printf("  with a KV cache of %6lld tokens per sequence:        %s\n",
                  static_cast<long long>(ctx), batch_text(critical_batch_size(c, hw, ctx, cost)).c_str());
  std::printf("\n");

  std::printf("prefill of %d tokens: %.2f ms at peak, %.2f ms at %.0f %% utilisation "
              "(worked-example accounting: %.2f ms at peak)\n",
              o.prompt_tokens, prefill_peak * 1e3, prefill_util * 1e3, o.utilisation * 100, prefill_text * 1e3);
  std::printf("  = %.1f batch-1 decode steps of time, for one output token\n",
              prefill_util / decode_bound(c, hw, 1, 0, cost).seconds);

  if (measured) {
    const Measured& m = *measured;
    std::printf("\nmeasured on this machine: the core's kernels (float32), best of the repetitions\n");
    std::printf("  %-26s  %10s  %10s  %11s  %11s  %12s\n", "kernel", "FLOP/byte", "ms",
                "GB/s", "GFLOP/s", "roof GFLOP/s");
    auto row = [&](const MeasuredPoint& p) {
      std::printf("  %-26s  %10.2f  %10.3f  %11.2f  %11.2f  %12.2f\n", p.name.c_str(), p.intensity(),
                  p.seconds * 1e3, p.bytes_per_second() / 1e9, p.flops_per_second() / 1e9,
                  attainable_flops(hw, p.intensity()) / 1e9);
    };
    for (const MeasuredPoint& p : m.linear) row(p);
    for (const MeasuredPoint& p : m.attention) row(p);
    // A kernel cannot beat its roof. A point above it means the roof was measured low (a noisy
    // bandwidth or FMA probe on a busy machine) or the kernel's data sat in a cache the probe
    // did not use: say which points, instead of drawing an impossible plot without a word.
    for (const std::vector<MeasuredPoint>* group : {&m.linear, &m.attention}) {
      for (const MeasuredPoint& p : *group) {
        const double over = p.flops_per_second() / attainable_flops(hw, p.intensity());
        if (over > 1.05) {
          std::printf("  note: %s runs %.0f%% above its roof: the roofs were measured low (a busy "
                      "machine) or its data stayed in a cache; rerun on a quiet machine with "
                      "--threads 1\n",
                      p.name.c_str(), 100.0 * (over - 1.0));
        }
      }
    }
    std::printf("\n  batch sweep of the %d x %d layer (matmul_cpu):\n  %6s  %10s  %12s  %14s\n",
                m.d_out, m.n_in, "batch", "step ms", "tokens/s", "gain vs prev");
    for (std::size_t i = 0; i < m.sweep.rows.size(); ++i) {
      const auto& r = m.sweep.rows[i];
      std::printf("  %6d  %10.3f  %12.1f", r.batch, r.seconds * 1e3, r.tokens_per_second);
      if (i > 0) std::printf("  %13.2fx", r.tokens_per_second / m.sweep.rows[i - 1].tokens_per_second);
      std::printf("\n");
    }
    std::printf("  critical batch, empirical: %.1f (where the flat and the linear asymptotes of the "
                "step time meet); tokens/s stops doubling with the batch at %s\n",
                m.sweep.asymptote_batch,
                m.sweep.knee_batch > 0 ? fmt::format("batch {}", m.sweep.knee_batch).c_str()
                                       : "no batch in the sweep");
    std::printf("  critical batch, formula B* = n d 4 / (2 n d BW/P - (n+d) 4) on the measured roofs "
                "(P = FMA peak %.1f GFLOP/s): %s\n",
                hw.peak_flops / 1e9, batch_text(m.formula_batch).c_str());
    std::printf("  the same formula with matmul_cpu's own best, P = %.1f GFLOP/s (%.0f %% of the peak): "
                "%s  <- compare with the empirical value\n",
                m.kernel_peak_flops / 1e9, 100.0 * m.kernel_peak_flops / hw.peak_flops,
                batch_text(m.kernel_formula_batch).c_str());
    if (m.model) {
      const ModelPoint& d1 = m.model->batched.front();
      std::printf("\n  the whole model (%s, random weights), median of the repetitions:\n", o.config.c_str());
      std::printf("  %-16s  %10s  %12s  %10s  %11s  %12s  %8s\n", "workload", "FLOP/byte",
                  "tokens/s", "GB/s", "GFLOP/s", "roof GFLOP/s", "vs B=1");
      auto model_row = [&](const ModelPoint& p) {
        std::printf("  %-16s  %10.2f  %12.1f  %10.2f  %11.2f  %12.2f  %7.2fx\n", p.name.c_str(),
                    p.intensity(), p.tokens_per_second(), p.bytes_per_second() / 1e9,
                    p.flops_per_second() / 1e9, attainable_flops(hw, p.intensity()) / 1e9,
                    p.tokens_per_second() / d1.tokens_per_second());
      };
      model_row(m.model->prefill);
      for (const ModelPoint& p : m.model->batched) model_row(p);
    } else {
      std::printf("\n  the whole model: %s\n", m.model_note.c_str());
    }
  } else {
    std::printf("\n(no measurements: they run with --hardware this, on this machine's own roofline)\n");
  }
  if (!o.plot.empty()) std::printf("\nroofline plot written to %s\n", o.plot.c_str());
  std::printf("\nNext: chapter 04 batches many sequences into each step to climb the roofline.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 03: the roofline (what bounds decode and prefill, predicted and "
               "measured)"};
  Options o;
  app.add_option("--config", o.config,
                 "model shape: " + fmt::format("{}", fmt::join(named_config_names(), ", ")))
      ->capture_default_str();
  app.add_option("--hardware", o.hardware,
                 "machine: " + fmt::format("{}", fmt::join(hardware_names(), ", ")) +
                     " ('this' measures the machine you run on)")
      ->capture_default_str();
  app.add_option("--batch", o.batch, "sequences decoding together")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--prompt-tokens", o.prompt_tokens, "prompt length for the prefill estimate")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--context", o.context,
                 "tokens already in each sequence's KV cache for the decode bound (0 = weights only, "
                 "as in the worked example)")
      ->check(integer_in(0, std::int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--utilisation", o.utilisation, "share of peak FLOP/s a prefill reaches, (0, 1]")
      ->check(finite_in(1e-3, 1.0))
      ->capture_default_str();
  app.add_option("--plot", o.plot, "write an SVG roofline to this file");
  app.add_option("--threads", o.threads, "CPU threads (0 = OpenMP default); 'this' is measured "
                                         "at 1, 2, 4, ... up to this many")
      ->check(thread_count());
  app.add_flag("--quick", o.quick, "smaller measurements (tests, CI)");
  app.add_flag("--json", o.json, "print one JSON object");
  return run_chapter(app, argc, argv, [&] { return run(o); });
}
