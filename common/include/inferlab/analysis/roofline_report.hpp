#pragma once
/// @file roofline_report.hpp
/// @brief Chapter 03's whole result as data: what the roofline predicts for a model on a machine
/// (roofline.hpp's cost model, every number the chapter shows) and, for "this" machine, what
/// its measurements found (roofline_measure.hpp, model_points.hpp), with the points to plot.
/// The chapter only prints this struct and turns it into JSON.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/analysis/model_points.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/analysis/roofline_measure.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief What to predict (and, for hardware "this", measure).
struct RooflineRequest {
  std::string config = "llama3-8b";   ///< a named_config() name
  std::string hardware = "h100-sxm";  ///< a hardware_names() name; "this" measures this machine
  int batch = 1;                      ///< sequences decoding together (>= 1)
  int prompt_tokens = 2000;           ///< prompt length of the prefill estimate (>= 1)
  std::int64_t context = 0;           ///< tokens in each sequence's KV cache for the decode bound
  double utilisation = 1.0;           ///< share of peak FLOP/s a prefill reaches, in (0, 1]
  bool quick = false;                 ///< smaller measurements (hardware "this" only)
  /// Called with one line before each measurement (the chapter prints it to stderr).
  std::function<void(const std::string&)> progress;
};

/// @brief The linear layers' intensities at one number of tokens in the batch.
struct LinearIntensityRow {
  int tokens = 0;            ///< tokens in the batch
  std::vector<OpCost> ops;   ///< linear_layer_costs() at that many tokens
  bool memory_bound = true;  ///< the whole set's intensity is below the ridge point
};

/// @brief The critical batch with a KV cache of some length.
struct ContextCriticalBatch {
  std::int64_t context = 0;     ///< tokens per sequence in the KV cache
  double critical_batch = 0.0;  ///< critical_batch_size() at that context (+inf: never)
};

/// @brief Everything the cost model predicts for one model on one machine.
struct RooflinePrediction {
  ModelConfig config;        ///< the model's shapes
  Hardware hardware;         ///< the machine (measured for "this")
  CostOptions cost;          ///< cost_options_for(hardware)
  int batch = 1;             ///< the request's batch: sequences decoding together
  std::int64_t context = 0;  ///< the request's context: tokens in each sequence's KV cache
  int prompt_tokens = 0;     ///< the request's prompt length, for the prefill estimate
  double utilisation = 1.0;  ///< the request's share of peak FLOP/s a prefill reaches
  /// Intensities at 1, 8, 64, 512 tokens, the request's batch (if not one of those), the prompt.
  std::vector<LinearIntensityRow> linear;
  std::int64_t attention_context = 0;      ///< the request's context, or 4096 when it is 0
  OpCost attention;                        ///< decode_attention_cost() at attention_context
  double attention_intensity_limit = 0.0;  ///< decode_attention_intensity_limit(): 2 g / bytes
  double attention_intensity_mha = 0.0;    ///< the same without GQA: 2 / bytes(kv)
  DecodeBound decode;                      ///< the request's batch and context
  DecodeBound decode_textbook;             ///< batch 1, the worked example's accounting
  double critical_textbook = 0.0;          ///< weights only, textbook accounting (+inf: never)
  double critical_with_activations = 0.0;  ///< with the activations, context 0 (+inf: never)
  std::vector<ContextCriticalBatch> critical_by_context;  ///< contexts 0, 128, ... 32768
  double prefill_seconds_at_peak = 0.0;   ///< the prompt's prefill at 100 % of the peak
  double prefill_seconds = 0.0;           ///< ... at the request's utilisation
  double prefill_seconds_textbook = 0.0;  ///< ... at the peak, textbook accounting
  double prefill_in_decode_steps = 0.0;   ///< prefill_seconds / one batch-1 decode step's time
  /// Whether the weights and the KV cache fit the device (absent when its memory is unknown).
  std::optional<MemoryFit> memory_fit;
};

/// @brief What the measurements on this machine found (hardware "this").
struct MachineRoofline {
  MachineMeasurement machine;            ///< bandwidth, FMA peak and Eigen's GEMM per thread count
  int n_in = 0;                          ///< inputs of the linear layer timed
  int d_out = 0;                         ///< outputs of the linear layer timed
  std::vector<MeasuredPoint> linear;     ///< that layer at batch 1, 8, 64, 512
  std::vector<MeasuredPoint> attention;  ///< decode attention: the config's GQA, then MHA
  EmpiricalCriticalBatch sweep;          ///< the layer's batch sweep
  double formula_batch = 0.0;            ///< linear_critical_batch() on the measured roofs
  double kernel_peak_flops = 0.0;        ///< matmul_packed's best FLOP/s in the sweep
  double kernel_formula_batch = 0.0;     ///< the same formula with that as the compute roof
  std::optional<ModelPoints> model;      ///< the whole model, when its weights suit this machine
  std::string model_note;                ///< why the whole model was not measured, when it was not
};

/// @brief A measured kernel faster than its roof allows.
struct AboveRoof {
  std::string name;      ///< the kernel
  double percent = 0.0;  ///< how far above the roof, in percent (> 5)
};

/// @brief Chapter 03's result.
struct RooflineReport {
  std::string config_name;                  ///< the request's config
  int threads = 0;                          ///< OpenMP threads when the report was made
  RooflinePrediction prediction;            ///< the cost model's numbers
  std::optional<MachineRoofline> measured;  ///< present for hardware "this"
  std::vector<AboveRoof> above_roof;       ///< measured kernels above their roof (see above_roof())
  std::vector<RooflinePoint> plot_points;  ///< what roofline_plot() draws
};

/// @brief The cost model's numbers for @p config on @p hardware (see RooflinePrediction).
/// @throws inferlab::Error for a batch or prompt < 1, a negative context, or a utilisation
/// outside (0, 1].
RooflinePrediction predict_roofline(const ModelConfig& config, const Hardware& hardware,
                                    const RooflineRequest& request);

/// @brief Measures this machine (measure_this_machine() at 1, 2, 4, ... up to the OpenMP
/// threads), times a 4096-input linear layer at batch 1/8/64/512 and in a batch sweep, decode
/// attention with @p config's heads (and without GQA), and the whole model @p config_name when
/// its float32 weights are between the last-level cache and 2 GB.
/// @param config the model whose attention shape is timed
/// @param config_name its name, to time the whole model when it fits the window above
/// @param quick smaller sizes and fewer repetitions (tests, CI)
/// @param progress called with a line before each measurement (may be empty)
/// @note Cost: tens of seconds (a few with @p quick).
MachineRoofline measure_machine_roofline(
    const ModelConfig& config, const std::string& config_name, bool quick,
    const std::function<void(const std::string&)>& progress = {});

/// @brief The measured kernels that run more than 5 % above their roof on @p hardware: the roofs
/// were measured low (a busy machine) or the kernel's data stayed in a cache.
std::vector<AboveRoof> above_roof(const MachineRoofline& measured, const Hardware& hardware);

/// @brief The points of chapter 03's plot. Measured: each timed linear layer with the model's
/// prediction for it, the attention kernels, the whole model's prefill and decode. Otherwise
/// the predicted decode at batch 1 and 64 and the prompt's prefill (through w1). Always the
/// predicted decode attention.
std::vector<RooflinePoint> roofline_points(const RooflinePrediction& prediction,
                                           const MachineRoofline* measured,
                                           const std::string& config_name, int prompt_tokens);

/// @brief The whole chapter: looks up the config and the hardware (or measures "this"),
/// predicts, and picks the plot's points.
/// @throws inferlab::Error for an unknown config or hardware name (before any measurement) and
/// as predict_roofline() does.
RooflineReport roofline_report(const RooflineRequest& request);

}  // namespace inferlab
