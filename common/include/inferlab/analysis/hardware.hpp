#pragma once
/// @file hardware.hpp
/// @brief The two numbers of a machine that the roofline model needs, peak FLOP/s and memory
/// bandwidth, for a table of current accelerators and for *this* machine, measured.
///
/// Every accelerator in the table is described by its **dense** tensor-core BF16 throughput.
/// Datasheets often print twice as much, because they assume 2:4 structured sparsity; a dense
/// matrix multiplication cannot use it, so the roofline never should. Bandwidth is the HBM
/// bandwidth of one device. All of them are datasheet peaks: real kernels reach perhaps 70-85 %
/// of the bandwidth and 40-80 % of the FLOP/s.
///
/// "this" is measured, not looked up: the bandwidth with the STREAM-style read probe of
/// membw.hpp, the FLOP/s with the register-only FMA probe of fma_peak.hpp (and, for comparison,
/// a float32 GEMM from Eigen, a tuned library), each for several thread counts; the best of
/// each is the machine's roof.
/// On a CPU the "tensor cores" are the SIMD FMA units, and the data type is float32.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace inferlab {

/// @brief One machine on the roofline: its two roofs and its memory capacity.
struct Hardware {
  std::string name;         ///< lookup name, e.g. "h100-sxm"
  std::string description;  ///< e.g. "NVIDIA H100 SXM5 80GB"
  std::string dtype;        ///< number format of peak_flops: "bf16" (GPUs), "fp32" (this CPU)
  double peak_flops = 0.0;  ///< dense FLOP/s in that format (the compute roof)
  double bandwidth = 0.0;   ///< memory bandwidth, bytes/s (the slope of the memory roof)
  double memory_bytes =
      0.0;                ///< capacity of that memory, bytes (decimal GB as the vendor prints it)
  bool measured = false;  ///< true for "this": numbers measured on the running machine
  std::string source;     ///< where the numbers come from

  /// @brief I* = peak FLOP/s / bandwidth, FLOP per byte: kernels below it are memory-bound.
  double ridge_point() const { return peak_flops / bandwidth; }
};

/// @brief The datasheet table (every entry except the measured "this").
const std::vector<Hardware>& hardware_table();

/// @brief Names accepted by hardware_by_name(): the table's, then "this".
std::vector<std::string> hardware_names();

/// @brief One row of the measurement of this machine: both probes at one thread count.
struct ThreadMeasurement {
  int threads = 0;              ///< OpenMP threads both probes ran with
  double read_bandwidth = 0.0;  ///< bytes/s, best of the repetitions
  double gemm_flops = 0.0;      ///< float32 FLOP/s of an n x n x n Eigen GEMM, best of the reps
  double fma_flops = 0.0;       ///< float32 FMA peak (fma_peak.hpp): the compute roof
};

/// @brief How hard to measure this machine.
struct MeasureOptions {
  /// Thread counts to try; empty = 1, 2, 4, ... and the OpenMP maximum.
  std::vector<int> thread_counts;
  std::size_t bandwidth_bytes = std::size_t{512} << 20;  ///< buffer read (>> last-level cache)
  int bandwidth_reps = 5;  ///< timed passes over the buffer; the best one counts
  int gemm_size = 1024;    ///< n of the n x n x n GEMM (2 n^3 FLOPs)
  int gemm_reps = 5;       ///< timed GEMMs (after one warm-up); the best one counts
  /// Called with one line before each measurement (the chapter prints it to stderr).
  std::function<void(const std::string&)> progress;
};

/// @brief Small sizes (64 MiB buffer, 512^3 GEMM, 3 reps): for tests and --quick.
MeasureOptions quick_measure_options();

/// @brief The measurement of this machine: one row per thread count, and the Hardware made of
/// the best bandwidth and the best FMA peak over all of them (a kernel can reach the FMA peak,
/// never exceed it; Eigen's GEMM, also measured, is what a tuned library reaches below it).
struct MachineMeasurement {
  Hardware hardware;                           ///< "this": best bandwidth, best FLOP/s
  std::vector<ThreadMeasurement> per_threads;  ///< one row per thread count, in the order tried
};

/// @brief Measures this machine.
/// @note Cost: per thread count, bandwidth_reps passes over bandwidth_bytes and gemm_reps + 1
/// GEMMs of 2 * gemm_size^3 FLOPs: about 2 s in total with the defaults on a small machine.
MachineMeasurement measure_this_machine(const MeasureOptions& options = {});

/// @brief The float32 FLOP/s of one n x n x n Eigen GEMM with @p threads threads (best of
/// @p reps after a warm-up); Eigen's own thread setting is restored afterwards.
double measure_gemm_flops(int n, int threads, int reps);

/// @brief Size of this machine's last-level cache as the C library reports it (L3, else L2),
/// or 32 MiB when it reports neither. A working set several times larger is served from memory.
/// @return bytes
std::size_t last_level_cache_bytes();

/// @brief Looks a machine up by name ("a100-sxm", "h100-sxm", "h200", "b200", "mi300x"), or
/// measures it ("this", with @p options).
/// @throws inferlab::Error for an unknown name; the message lists the known ones.
Hardware hardware_by_name(const std::string& name, const MeasureOptions& options = {});

}  // namespace inferlab
