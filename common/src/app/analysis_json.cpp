// The `--json` form of the analysis results (chapters 02 and 03).
#include "inferlab/app/analysis_json.hpp"

#include <cmath>

namespace inferlab {

using json = nlohmann::json;

namespace {

// JSON has no infinity: a critical batch that does not exist is null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json op_json(const OpCost& op) {
  return {
      {"name", op.name}, {"flops", op.flops}, {"bytes", op.bytes}, {"intensity", op.intensity()}};
}

// What every timed point has: its work, its time, its rate and the roof above it.
template <class Point>
json timed_point_json(const Point& m, const Hardware& hw) {
  return {{"name", m.name},
          {"flops", m.flops},
          {"bytes", m.bytes},
          {"seconds", m.seconds},
          {"intensity", m.intensity()},
          {"flops_per_second", m.flops_per_second()},
          {"attainable_flops_per_second", attainable_flops(hw, m.intensity())}};
}

json point_json(const MeasuredPoint& m, const Hardware& hw) {
  json out = timed_point_json(m, hw);
  out["bytes_per_second"] = m.bytes_per_second();
  return out;
}

json model_point_json(const ModelPoint& m, const Hardware& hw) {
  json out = timed_point_json(m, hw);
  out["tokens"] = m.tokens;
  out["tokens_per_second"] = m.tokens_per_second();
  return out;
}

json memory_fit_json(const MemoryFit& fit) {
  return {{"fits", fit.fits},
          {"needed_bytes", fit.needed_bytes},
          {"weight_bytes", fit.weight_bytes},
          {"kv_bytes", fit.kv_bytes},
          {"device_bytes", fit.device_bytes},
          {"message", memory_fit_message(fit)}};
}

json hardware_json(const Hardware& hw) {
  return {{"name", hw.name},
          {"description", hw.description},
          {"dtype", hw.dtype},
          {"peak_flops", hw.peak_flops},
          {"bandwidth_bytes_per_s", hw.bandwidth},
          {"memory_bytes", hw.memory_bytes},
          {"measured", hw.measured},
          {"source", hw.source}};
}

json machine_json(const MachineRoofline& m, const Hardware& hw) {
  json rows = json::array(), linear = json::array(), attention = json::array(),
       sweep = json::array();
  for (const ThreadMeasurement& r : m.machine.per_threads)
    rows.push_back({{"threads", r.threads},
                    {"read_bytes_per_s", r.read_bandwidth},
                    {"gemm_flops", r.gemm_flops},
                    {"fma_flops", r.fma_flops}});
  for (const MeasuredPoint& point : m.linear) linear.push_back(point_json(point, hw));
  for (const MeasuredPoint& point : m.attention) attention.push_back(point_json(point, hw));
  for (const auto& r : m.sweep.rows)
    sweep.push_back(
        {{"batch", r.batch}, {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second}});
  json out = {{"per_threads", rows},
              {"linear_shape", {m.d_out, m.n_in}},
              {"linear", linear},
              {"attention", attention},
              {"critical_batch",
               {{"sweep", sweep},
                {"empirical_asymptotes", m.sweep.asymptote_batch},
                {"empirical_knee", m.sweep.knee_batch},
                {"formula", finite_or_null(m.formula_batch)},
                {"kernel_peak_flops", m.kernel_peak_flops},
                {"formula_kernel_roof", finite_or_null(m.kernel_formula_batch)}}},
              {"model", nullptr}};
  if (m.model) {
    json points = json::array();
    points.push_back(model_point_json(m.model->prefill, hw));
    for (const ModelPoint& point : m.model->batched) points.push_back(model_point_json(point, hw));
    out["model"] = points;
  } else {
    out["model_note"] = m.model_note;
  }
  return out;
}

}  // namespace

json to_json(const KVPredictionCheck& check) {
  return {{"dtype", dtype_name(check.type)},
          {"predicted_bytes_per_token", check.predicted_bytes_per_token},
          {"allocated_bytes_per_token", check.allocated_bytes_per_token},
          {"equal", check.equal()}};
}

json to_json(const KVSizingTable& table) {
  json rows = json::array();
  for (const KVSizingRow& r : table.rows)
    rows.push_back({{"dtype", dtype_name(r.dtype)},
                    {"bytes_per_token", r.bytes_per_token},
                    {"bytes_per_sequence", r.bytes_per_sequence},
                    {"one_gpu_80GB",
                     {{"fits", r.one_gpu.fits},
                      {"needed_bytes", r.one_gpu.needed_bytes},
                      {"message", memory_fit_message(r.one_gpu)}}},
                    {"gpus_80GB", r.gpus},
                    {"max_sequences", r.max_sequences}});
  return {{"config", table.name}, {"context_tokens", table.context_tokens}, {"rows", rows}};
}

json to_json(const std::vector<StepLatency>& steps) {
  json rows = json::array();
  for (const StepLatency& s : steps)
    rows.push_back({{"position", s.position},
                    {"naive_s", s.naive_s},
                    {"cached_s", s.cached_s},
                    {"naive_spread", s.naive_spread},
                    {"cached_spread", s.cached_spread},
                    {"identical_logits", s.identical}});
  return rows;
}

json to_json(const std::vector<KVQuality>& quality) {
  json rows = json::array();
  for (const KVQuality& k : quality)
    rows.push_back({{"dtype", dtype_name(k.type)},
                    {"bytes_per_token", k.bytes_per_token},
                    {"max_abs_logit_diff", k.max_abs_logit_diff},
                    {"mean_abs_logit_diff", k.mean_abs_logit_diff},
                    {"positions", k.positions},
                    {"argmax_changed", k.argmax_changed},
                    {"sequences", k.sequences},
                    {"sequences_changed", k.sequences_changed},
                    {"tokens_changed", k.tokens_changed}});
  return rows;
}

json to_json(const RooflineReport& report) {
  const RooflinePrediction& p = report.prediction;
  const Hardware& hw = p.hardware;
  json linear = json::array();
  for (const LinearIntensityRow& row : p.linear) {
    json ops = json::array();
    for (const OpCost& op : row.ops) ops.push_back(op_json(op));
    linear.push_back({{"tokens", row.tokens}, {"ops", ops}});
  }
  json by_context = json::array();
  for (const ContextCriticalBatch& b : p.critical_by_context)
    by_context.push_back(
        {{"context", b.context}, {"critical_batch", finite_or_null(b.critical_batch)}});
  const DecodeBound& decode = p.decode;
  return {{"config", report.config_name},
          {"hardware", hardware_json(hw)},
          {"threads", report.threads},
          {"weight_dtype", dtype_name(p.cost.weight_dtype)},
          {"ridge_point", hw.ridge_point()},
          {"linear_intensity", linear},
          {"decode_attention",
           {{"context", p.attention_context},
            {"intensity", p.attention.intensity()},
            {"intensity_limit", p.attention_intensity_limit},
            {"gqa_group", p.config.kv_group()}}},
          {"memory_fit", p.memory_fit ? memory_fit_json(*p.memory_fit) : json(nullptr)},
          {"decode_bound",
           {{"batch", p.batch},
            {"context", p.context},
            {"seconds_per_step", decode.seconds},
            {"tokens_per_second", decode.tokens_per_second},
            {"tokens_per_second_per_sequence", decode.tokens_per_second_per_sequence},
            {"memory_bound", decode.step.memory_bound()},
            {"weight_bytes", decode.step.weight_bytes},
            {"kv_bytes", decode.step.kv_bytes},
            {"flops", decode.step.flops}}},
          {"critical_batch",
           {{"formula", "B* = W / (F * BW / P - K); weights only: (bytes per weight / 2) * P / BW"},
            {"weights_only", finite_or_null(p.critical_textbook)},
            {"with_activations", finite_or_null(p.critical_with_activations)},
            {"by_context", by_context}}},
          {"prefill",
           {{"tokens", p.prompt_tokens},
            {"seconds_at_peak", p.prefill_seconds_at_peak},
            {"utilisation", p.utilisation},
            {"seconds", p.prefill_seconds}}},
          {"textbook",
           {{"decode_seconds_per_token", p.decode_textbook.seconds},
            {"tokens_per_second", p.decode_textbook.tokens_per_second},
            {"critical_batch", p.critical_textbook},
            {"prefill_seconds", p.prefill_seconds_textbook}}},
          {"measured", report.measured ? machine_json(*report.measured, hw) : json(nullptr)}};
}

}  // namespace inferlab
