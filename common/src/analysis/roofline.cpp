// The roofline cost model (see roofline.hpp); the timed kernels are in roofline_measure.cpp.
#include "inferlab/analysis/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/analysis/hardware.hpp"

namespace inferlab {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Activation numbers a token reads and writes through every linear layer of the model:
// sum over matrices of (in + out), the quantity behind CostOptions' activation bytes.
double activation_numbers_per_token(const ModelConfig& c) {
  const double D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), V = c.vocab_size;
  const double per_layer = (D + Q) + 2 * (D + KV) + (Q + D) + 2 * (D + H) + (H + D);
  return c.n_layers * per_layer + (D + V);
}

// Attention FLOPs per (query, key) pair per layer, over all query heads: q.k and p.v are each a
// multiply and an add per number of a head.
double attention_flops_per_pair(const ModelConfig& c) {
  return 4.0 * c.n_layers * c.n_heads * c.head_size();
}

}  // namespace

CostOptions cost_options_for(const Hardware& hardware) {
  CostOptions o;
  if (hardware.dtype == "fp32") o.weight_dtype = o.kv_dtype = o.activation_dtype = DType::f32;
  return o;
}

double attainable_flops(const Hardware& hardware, double intensity) {
  return std::min(hardware.peak_flops, hardware.bandwidth * intensity);
}

OpCost linear_cost(std::string name, int tokens, int n_in, int d_out, DType weights,
                   DType activations) {
  if (tokens < 0 || n_in < 1 || d_out < 1) throw Error("linear_cost: bad shape");
  const double T = tokens, n = n_in, d = d_out;
  return {std::move(name), 2.0 * T * n * d,
          n * d * dtype_bytes(weights) + T * (n + d) * dtype_bytes(activations)};
}

std::vector<OpCost> linear_layer_costs(const ModelConfig& c, int tokens, const CostOptions& o) {
  const DType w = o.weight_dtype, a = o.activation_dtype;
  const int D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  return {linear_cost("wq", tokens, D, Q, w, a),
          linear_cost("wk", tokens, D, KV, w, a),
          linear_cost("wv", tokens, D, KV, w, a),
          linear_cost("wo", tokens, Q, D, w, a),
          linear_cost("w1", tokens, D, H, w, a),
          linear_cost("w3", tokens, D, H, w, a),
          linear_cost("w2", tokens, H, D, w, a),
          linear_cost("classifier", tokens, D, c.vocab_size, w, a)};
}

OpCost decode_attention_cost(const ModelConfig& c, std::int64_t context, const CostOptions& o) {
  if (context < 1) throw Error("decode_attention_cost: context must be >= 1");
  const double hs = c.head_size(), S = double(context);
  OpCost op;
  op.name = "attention (decode)";
  op.flops = 4.0 * c.n_heads * hs * S;
  // The cache (K and V of every position) dominates; the query in and the output out are one
  // token's worth each.
  op.bytes = 2.0 * c.n_kv_heads * hs * S * dtype_bytes(o.kv_dtype) +
             2.0 * c.n_heads * hs * dtype_bytes(o.activation_dtype);
  return op;
}

double decode_attention_intensity_limit(const ModelConfig& c, DType kv) {
  return 2.0 * double(c.kv_group()) / dtype_bytes(kv);
}

double matmul_params(const ModelConfig& c) {
  const double D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  return c.n_layers * (D * Q + 2 * D * KV + Q * D + 3 * D * H) + double(c.vocab_size) * D;
}

double weight_bytes_per_step(const ModelConfig& c, const CostOptions& o) {
  if (o.textbook_accounting) return double(c.n_params()) * dtype_bytes(o.weight_dtype);
  // bytes_read_per_token() counts float32 numbers: rescale to the weight format.
  return double(c.bytes_read_per_token()) / sizeof(float) * dtype_bytes(o.weight_dtype);
}

StepShape& StepShape::add_decode(std::int64_t context) {
  if (context < 0) throw Error("StepShape::add_decode: negative context");
  decode_tokens += 1;
  context_tokens += context;
  attended_pairs += context;
  return *this;
}

StepShape& StepShape::add_prefill(std::int64_t chunk, std::int64_t prefix) {
  if (chunk < 0 || prefix < 0) throw Error("StepShape::add_prefill: negative size");
  prefill_tokens += int(chunk);
  context_tokens += prefix + chunk;
  // Causal: the chunk's i-th token (1-based) sees the prefix and i tokens of the chunk.
  attended_pairs += chunk * prefix + chunk * (chunk + 1) / 2;
  return *this;
}

StepCost step_cost(const ModelConfig& c, const Hardware& hw, const StepShape& shape,
                   const CostOptions& o) {
  StepCost s;
  const double T = shape.tokens();
  if (T <= 0) return s;
  if (o.textbook_accounting) {
    s.flops = 2.0 * double(c.n_params()) * T;
    s.weight_bytes = weight_bytes_per_step(c, o);
  } else {
    s.flops =
        2.0 * matmul_params(c) * T + attention_flops_per_pair(c) * double(shape.attended_pairs);
    s.weight_bytes = weight_bytes_per_step(c, o);
    s.kv_bytes = double(shape.context_tokens) * kv_bytes_per_token(c, o.kv_dtype);
    s.activation_bytes = T * activation_numbers_per_token(c) * dtype_bytes(o.activation_dtype);
  }
  s.compute_seconds = s.flops / (hw.peak_flops * o.flops_utilisation);
  s.memory_seconds = s.bytes() / (hw.bandwidth * o.bandwidth_utilisation);
  return s;
}

double step_time_seconds(const ModelConfig& c, const Hardware& hw, const StepShape& shape,
                         const CostOptions& o) {
  return step_cost(c, hw, shape, o).seconds();
}

DecodeBound decode_bound(const ModelConfig& c, const Hardware& hw, int batch, std::int64_t context,
                         const CostOptions& o) {
  if (batch < 1) throw Error("decode_bound: batch must be >= 1");
  StepShape shape;
  for (int b = 0; b < batch; ++b) shape.add_decode(context);
  DecodeBound d;
  d.step = step_cost(c, hw, shape, o);
  d.seconds = d.step.seconds();
  d.tokens_per_second = batch / d.seconds;
  d.tokens_per_second_per_sequence = 1.0 / d.seconds;
  return d;
}

double critical_batch_size(const ModelConfig& c, const Hardware& hw, std::int64_t context,
                           const CostOptions& o) {
  // Everything in a decode step is either paid once (the weights, W) or once per sequence
  // (its FLOPs F, its KV and activation bytes K): step_cost is linear in B, so solve
  // B F / P' = (W + B K) / BW' directly.
  const StepCost one = step_cost(c, hw, StepShape{}.add_decode(context), o);
  const double W = one.weight_bytes;
  const double K = one.kv_bytes + one.activation_bytes;
  const double F = one.flops;
  const double P = hw.peak_flops * o.flops_utilisation;
  const double BW = hw.bandwidth * o.bandwidth_utilisation;
  const double denominator = F * BW / P - K;
  return denominator > 0.0 ? W / denominator : kInfinity;
}

double prefill_seconds(const ModelConfig& c, const Hardware& hw, int prompt_tokens,
                       const CostOptions& o) {
  if (prompt_tokens < 1) throw Error("prefill_seconds: the prompt must have at least one token");
  return step_time_seconds(c, hw, StepShape{}.add_prefill(prompt_tokens), o);
}

double linear_critical_batch(int n_in, int d_out, const Hardware& hw, DType weights,
                             DType activations) {
  const double n = n_in, d = d_out;
  const double denominator =
      2.0 * n * d * hw.bandwidth / hw.peak_flops - (n + d) * dtype_bytes(activations);
  return denominator > 0.0 ? n * d * dtype_bytes(weights) / denominator : kInfinity;
}

}  // namespace inferlab
