// The hardware table and the measurement of this machine.
#include "inferlab/analysis/hardware.hpp"

#include <unistd.h>

#include <omp.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inferlab/base/error.hpp"
#include "inferlab/analysis/fma_peak.hpp"
#include "inferlab/analysis/membw.hpp"
#include "inferlab/base/timer.hpp"

namespace inferlab {

const std::vector<Hardware>& hardware_table() {
  // Dense BF16 tensor-core FLOP/s (datasheets print the 2:4-sparse figure, twice these), HBM
  // bandwidth and capacity of ONE device, as the vendors' datasheets give them. The A100's
  // bandwidth is rounded to 2.0 TB/s (datasheet: 2,039 GB/s) because that is the figure the
  // chapters and their exercises use. Capacities are the printed decimal figures: an "80GB"
  // A100/H100 physically holds 80 GiB (85.9e9 bytes), but the CUDA context, the activations and
  // the allocator's slack take a share of it, so the printed figure is a fair usable budget.
  static const std::vector<Hardware> table = {
      {"a100-sxm", "NVIDIA A100 SXM4 80GB", "bf16", 312e12, 2.0e12, 80e9, false,
       "NVIDIA A100 datasheet: 312 TFLOP/s BF16 dense (624 sparse), 2,039 GB/s HBM2e, 80 GB"},
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", "bf16", 989e12, 3.35e12, 80e9, false,
       "NVIDIA H100 datasheet: 1,979 TFLOP/s BF16 with sparsity = 989 dense, 3.35 TB/s HBM3, 80 "
       "GB"},
      {"h200", "NVIDIA H200 SXM 141GB", "bf16", 989e12, 4.8e12, 141e9, false,
       "NVIDIA H200 datasheet: same GH100 compute as H100 SXM (989 TFLOP/s BF16 dense), "
       "4.8 TB/s HBM3e, 141 GB"},
      {"b200", "NVIDIA B200 (HGX B200, 1000 W)", "bf16", 2250e12, 8.0e12, 180e9, false,
       "NVIDIA HGX B200 spec: 36 PFLOP/s BF16 sparse for 8 GPUs = 2.25 PFLOP/s dense per GPU, "
       "8 TB/s HBM3e, 180 GB per GPU (192 GB in early announcements)"},
      {"mi300x", "AMD Instinct MI300X", "bf16", 1307.4e12, 5.3e12, 192e9, false,
       "AMD MI300X datasheet: 1,307.4 TFLOP/s BF16 dense (2,614.9 sparse), 5.3 TB/s HBM3, 192 GB"},
  };
  return table;
}

std::vector<std::string> hardware_names() {
  std::vector<std::string> names;
  for (const Hardware& h : hardware_table()) names.push_back(h.name);
  names.push_back("this");
  return names;
}

MeasureOptions quick_measure_options() {
  MeasureOptions o;
  o.bandwidth_bytes = std::size_t{64} << 20;
  o.bandwidth_reps = 3;
  o.gemm_size = 512;
  o.gemm_reps = 3;
  return o;
}

MachineMeasurement measure_this_machine(const MeasureOptions& options) {
  std::vector<int> counts = options.thread_counts;
  const int max_threads = omp_get_max_threads();
  if (counts.empty()) {
    for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
    counts.push_back(max_threads);
  }
  MachineMeasurement m;
  for (int t : counts) {
    if (t < 1) throw Error(fmt::format("measure_this_machine: bad thread count {}", t));
    if (options.progress)
      options.progress(
          fmt::format("measuring this machine with {} thread(s): read bandwidth over "
                      "{} MiB, then a {}^3 float32 GEMM and the FMA peak",
                      t, options.bandwidth_bytes >> 20, options.gemm_size));
    ThreadMeasurement row;
    row.threads = t;
    row.read_bandwidth =
        measure_read_bandwidth(options.bandwidth_bytes, t, options.bandwidth_reps).read_gbs * 1e9;
    row.gemm_flops = measure_gemm_flops(options.gemm_size, t, options.gemm_reps);
    row.fma_flops = measure_fma_peak(t, options.gemm_reps).flops;
    m.per_threads.push_back(row);
  }
  // The roofs are the best the machine showed: bandwidth often peaks before all cores are busy,
  // the FMA units want every core.
  Hardware& h = m.hardware;
  h.name = "this";
  h.dtype = "fp32";
  h.measured = true;
  int best_bw_threads = 0, best_flops_threads = 0;
  for (const ThreadMeasurement& row : m.per_threads) {
    if (row.read_bandwidth > h.bandwidth)
      h.bandwidth = row.read_bandwidth, best_bw_threads = row.threads;
    if (row.fma_flops > h.peak_flops)
      h.peak_flops = row.fma_flops, best_flops_threads = row.threads;
  }
  h.description = fmt::format("this machine (CPU, up to {} threads)", max_threads);
  h.memory_bytes = 0.0;  // not measured: the roofline does not need it
  h.source = fmt::format(
      "measured: read bandwidth {:.1f} GB/s ({} threads, {} MiB buffer), float32 FMA peak "
      "{:.1f} GFLOP/s ({} threads)",
      h.bandwidth / 1e9, best_bw_threads, options.bandwidth_bytes >> 20, h.peak_flops / 1e9,
      best_flops_threads);
  return m;
}

Hardware hardware_by_name(const std::string& name, const MeasureOptions& options) {
  if (name == "this") return measure_this_machine(options).hardware;
  for (const Hardware& h : hardware_table())
    if (h.name == name) return h;
  throw Error(
      fmt::format("unknown hardware '{}'; known: {}", name, fmt::join(hardware_names(), ", ")));
}

std::size_t last_level_cache_bytes() {
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return llc > 0 ? std::size_t(llc) : std::size_t{32} << 20;
}

}  // namespace inferlab
