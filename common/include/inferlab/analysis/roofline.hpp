#pragma once
/// @file roofline.hpp
/// @brief The roofline cost model of a transformer step (analytic: no timing here; the
/// measurements that place this machine's real kernels on its roofline are in
/// roofline_measure.hpp, the picture in app/plots.hpp).
///
/// **The model.** A kernel that does F FLOPs and moves M bytes between memory and the chip
/// takes at least max(F / P, M / BW) on a machine with peak P FLOP/s and bandwidth BW bytes/s.
/// Its arithmetic intensity I = F / M decides which term wins: below the ridge point
/// I* = P / BW the bytes do (memory-bound: faster arithmetic does not help), above it the FLOPs
/// do (compute-bound). Plotted on log-log axes, attainable FLOP/s = min(P, BW x I) is a sloped
/// roof meeting a flat one at I*.
///
/// **A linear layer** (n inputs, d outputs) over B tokens does 2 B n d FLOPs and moves n d
/// weights once plus B (n + d) activations, so with b-byte weights and activations
///
///     I = 2 B n d / (b n d + b B (n + d))  ~  2 B / b   for B << n, d,
///
/// i.e. about B FLOP/byte in BF16: batch-1 decode sits near 1 FLOP/byte, ~300 x below an H100's
/// ridge, and the weights' cost is shared by every token in the batch.
///
/// **Decode attention** is different: each sequence reads its *own* keys and values. One new
/// token per sequence does 4 x Nh x hs FLOPs per cached position (q.k and p.v, 2 FLOPs each per
/// number) and reads 2 x Nkv x hs KV numbers, so I = 2 g / bytes(kv) with g = Nh / Nkv: 1 FLOP/byte
/// for multi-head attention in BF16 and g times more with grouped-query attention — whatever the
/// batch size, because there is nothing for the sequences of a batch to share.
///
/// **A step** of a serving engine runs some decode tokens and some prompt (prefill) tokens
/// through the model at once (StepShape); step_time_seconds() is the roofline's lower bound
/// for it, the clock of the batching simulator of a later chapter.
///
/// The accounting (default): a step reads every weight matrix once (the embedding table only
/// one row per token: it is indexed, not multiplied), the KV positions its attention reads, and
/// each linear layer's input and output activations; it does 2 FLOPs per matrix parameter per
/// token, plus 4 x Nh x hs per (query, key) pair of attention per layer. The classifier is
/// applied to every token (an upper bound for prefill, where engines only need the last
/// token's logits). Norms, RoPE, softmax and SwiGLU are elementwise and left out.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Number formats and efficiencies the cost model assumes.
struct CostOptions {
  DType weight_dtype = DType::bf16;      ///< format of the weights read each step
  DType kv_dtype = DType::bf16;          ///< format of the KV cache read each step
  DType activation_dtype = DType::bf16;  ///< format of the activations each layer reads and writes
  double flops_utilisation = 1.0;        ///< share of peak FLOP/s reached (prefill: ~0.4-0.6)
  double bandwidth_utilisation = 1.0;    ///< share of peak bandwidth reached (~0.7-0.85)
  /// The worked example's simplifications: every parameter (the embedding table too) is read
  /// once per step and costs 2 FLOPs per token; activations and attention are ignored.
  bool textbook_accounting = false;
};

/// @brief The formats that match a machine: fp32 everywhere for a CPU whose peak was measured
/// in fp32 ("this"), bf16 otherwise.
CostOptions cost_options_for(const Hardware& hardware);

/// @brief FLOPs and bytes moved of one operation.
struct OpCost {
  std::string name;    ///< what the operation is (e.g. "wq", "attention")
  double flops = 0.0;  ///< FLOPs (a multiply-add counts 2)
  double bytes = 0.0;  ///< bytes moved from main memory, every operand read once
  /// @brief Arithmetic intensity, FLOP per byte (0 when nothing is moved).
  double intensity() const { return bytes > 0.0 ? flops / bytes : 0.0; }
};

/// @brief Attainable FLOP/s at intensity @p intensity: min(peak, bandwidth x intensity).
double attainable_flops(const Hardware& hardware, double intensity);

/// @brief A linear layer y (T, d) = x (T, n) W^T with W (d, n), for @p tokens tokens.
/// @note FLOPs 2 T n d; bytes n d bytes(w) + T (n + d) bytes(act).
OpCost linear_cost(std::string name, int tokens, int n_in, int d_out, DType weights,
                   DType activations);

/// @brief Every linear layer of one transformer layer (wq, wk, wv, wo, w1, w2, w3) and the
/// classifier, for @p tokens tokens in the batch.
std::vector<OpCost> linear_layer_costs(const ModelConfig& config, int tokens,
                                       const CostOptions& options = {});

/// @brief Decode attention of ONE new token over @p context cached positions, one layer, one
/// sequence: FLOPs 4 Nh hs context; bytes 2 Nkv hs context bytes(kv) + the query and output.
OpCost decode_attention_cost(const ModelConfig& config, std::int64_t context,
                             const CostOptions& options = {});
/// @brief Its intensity for a long context: 2 g / bytes(kv), g = Nh / Nkv. Batching does not
/// change it: B sequences do B times the FLOPs on B times the bytes.
double decode_attention_intensity_limit(const ModelConfig& config, DType kv);

/// @brief Parameters a token is multiplied by: the 7 matrices of every layer and the
/// classifier (the embedding table is indexed, not multiplied).
double matmul_params(const ModelConfig& config);
/// @brief Weight bytes one step reads, in options.weight_dtype (see the accounting above).
double weight_bytes_per_step(const ModelConfig& config, const CostOptions& options = {});

/// @brief What one engine step runs: decode tokens of running sequences and prompt tokens of
/// new ones, together (continuous batching mixes both). Build it with add_decode() and
/// add_prefill(), which keep the two attention counts consistent.
struct StepShape {
  int decode_tokens = 0;   ///< sequences taking one decode step (one token each)
  int prefill_tokens = 0;  ///< prompt tokens processed in this step (all prompts, all chunks)
  /// Total context tokens attended: KV positions the step's attention reads, summed over the
  /// sequences in it (a decode sequence of length c reads c; a prompt chunk reads its prefix
  /// and itself). Drives the KV bytes.
  std::int64_t context_tokens = 0;
  /// (query, key) pairs the attention scores, summed over every token of the step (a decode
  /// token over c positions: c; a chunk of p tokens after a prefix of s: p s + p (p + 1) / 2).
  /// Drives the attention FLOPs.
  std::int64_t attended_pairs = 0;

  /// @brief Adds one decode token of a sequence that will hold @p context tokens after it.
  StepShape& add_decode(std::int64_t context);
  /// @brief Adds a prompt chunk of @p chunk tokens after @p prefix tokens already cached.
  StepShape& add_prefill(std::int64_t chunk, std::int64_t prefix = 0);
  /// @brief Tokens the step forwards: decode_tokens + prefill_tokens (T of the step).
  int tokens() const { return decode_tokens + prefill_tokens; }
};

/// @brief The roofline's account of one step.
struct StepCost {
  double flops = 0.0;             ///< matrix FLOPs + attention FLOPs
  double weight_bytes = 0.0;      ///< weights read once for the whole step
  double kv_bytes = 0.0;          ///< context_tokens x KV bytes per token
  double activation_bytes = 0.0;  ///< T x activations read and written per token, all layers
  double compute_seconds = 0.0;   ///< flops / (peak x flops_utilisation)
  double memory_seconds = 0.0;    ///< bytes / (bandwidth x bandwidth_utilisation)
  /// @brief All bytes the step moves: weights + KV + activations.
  double bytes() const { return weight_bytes + kv_bytes + activation_bytes; }
  /// @brief The step's time bound in seconds: max(compute_seconds, memory_seconds).
  double seconds() const {
    return compute_seconds > memory_seconds ? compute_seconds : memory_seconds;
  }
  /// @brief True when memory traffic, not arithmetic, sets the step time (ties count as memory).
  bool memory_bound() const { return memory_seconds >= compute_seconds; }
};

/// @brief The roofline account of one step (zero for an empty step).
StepCost step_cost(const ModelConfig& config, const Hardware& hardware, const StepShape& shape,
                   const CostOptions& options = {});

/// @brief Lower bound on the wall time of one engine step: max(FLOPs / peak, bytes / bandwidth)
/// with the efficiencies of @p options. This is the clock of the batching simulator (chapter
/// 04): a step of B decode sequences of context c is
/// `StepShape{}.add_decode(c)...` B times, a prompt of p tokens is `add_prefill(p)`.
/// @note The bound ignores kernel-launch and scheduling overheads, and assumes compute and
/// memory traffic overlap perfectly; real steps take longer (divide by the utilisations you
/// measure). An empty step takes 0 s.
double step_time_seconds(const ModelConfig& config, const Hardware& hardware,
                         const StepShape& shape, const CostOptions& options = {});

/// @brief The decode bound for @p batch sequences each holding @p context tokens.
struct DecodeBound {
  StepCost step;                                ///< the account of one decode step of the batch
  double seconds = 0.0;                         ///< per step
  double tokens_per_second = 0.0;               ///< all sequences together
  double tokens_per_second_per_sequence = 0.0;  ///< what one user sees: 1 / seconds
};
/// @brief The roofline bound on decode: one step of @p batch decode tokens, each over
/// @p context cached positions (see step_time_seconds()).
/// @param config the model
/// @param hardware the machine's peak FLOP/s and bandwidth
/// @param batch sequences decoding together (B >= 1)
/// @param context tokens each sequence holds, the new one included
/// @param options number formats and efficiencies
/// @return the step's cost and time, and tokens/s overall and per sequence
/// @throws inferlab::Error if @p batch < 1.
DecodeBound decode_bound(const ModelConfig& config, const Hardware& hardware, int batch,
                         std::int64_t context, const CostOptions& options = {});

/// @brief The batch size B* at which a decode step turns compute-bound: the solution of
/// B F / P = (W + B K) / BW, i.e. B* = W / (F BW / P - K), where W = weight bytes per step,
/// F = FLOPs per token, K = KV (+ activation) bytes per sequence at @p context. Without KV
/// (context 0) and with b-byte weights it is ~ (b / 2) x I*: the ridge point for BF16
/// (Llama-3-8B on H100: 989 / 3.35 = 295).
/// @return +infinity when K >= F BW / P: every extra sequence brings as many bytes (its KV
/// cache) as FLOPs can cover, and decode stays memory-bound at any batch size.
double critical_batch_size(const ModelConfig& config, const Hardware& hardware,
                           std::int64_t context, const CostOptions& options = {});

/// @brief Time to prefill a prompt of @p prompt_tokens tokens in one step, at
/// options.flops_utilisation of the peak (causal attention over the prompt included unless
/// textbook_accounting). Llama-3-8B, 2,000 tokens, H100 at peak: ~32 ms.
double prefill_seconds(const ModelConfig& config, const Hardware& hardware, int prompt_tokens,
                       const CostOptions& options = {});

/// @brief The critical batch of ONE linear layer (n in, d out) on @p hardware:
/// 2 B n d / P = (n d bytes(w) + B (n + d) bytes(act)) / BW solved for B (infinity if never).
double linear_critical_batch(int n_in, int d_out, const Hardware& hardware, DType weights,
                             DType activations);

/// @brief A point to put on a roofline plot.
struct RooflinePoint {
  std::string label;              ///< text drawn next to the point
  double intensity = 0.0;         ///< FLOP/byte
  double flops_per_second = 0.0;  ///< achieved (measured) or attainable (analytic)
  bool measured = false;          ///< measured points and analytic ones are drawn differently
};

}  // namespace inferlab
