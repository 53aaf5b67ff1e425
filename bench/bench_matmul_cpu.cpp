// Benchmark: the CPU matmul ladder (kernels/README.md, "The CPU matmul ladder"). Every rung is
// validated against matmul_ref, the fast rungs are checked to return the same bits as each
// other, then each is timed (median of repetitions) and reported in GFLOP/s against this
// machine's measured FMA peak, and in GB/s of weights against its measured read bandwidth.
// Then the quantized ladder (quant_matmul.hpp), per storage format: rung 1 against matmul_ref
// on the dequantized weights, rungs 2 and 3 against rung 1 within the activation-rounding
// bound (F16, BF16: float activations, within float rounding) and bit for bit against each
// other, GB/s counted in stored bytes.
// Not a test: nothing is asserted, a failed check is printed as FAIL and the exit code is 1.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/analysis/fma_peak.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/quant_matmul.hpp"
#include "inferlab/analysis/membw.hpp"
#include "inferlab/base/timer.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Version 0 is matmul_ref, 1.. the CPU ladder. Version 3 runs on weights packed beforehand
// (`packed`, the same matrix as w), as the forward pass does: packing is not timed.
void run_version(int version, float* y, const float* x, const float* w,
                 const k::PackedMatrix& packed, int T, int n, int d) {
  if (version == 0)
    k::matmul_ref(y, x, w, T, n, d);
  else if (version == 3)
    k::matmul_packed(y, x, packed, T);
  else
    k::matmul_cpu_version(version, y, x, w, T, n, d);
}

struct Roofs {
  double flops, read_gbs;
};

// The quantized ladder on one shape and format: copies of the matrix (beyond the last-level
// cache), each rung checked, then timed. Returns false if a check failed.
bool bench_quant(k::TensorType type, int n, int d, const std::vector<int>& tokens, int reps,
                 const Roofs& roof) {
  const std::size_t wsize = std::size_t(n) * d;
  const std::size_t stored = k::tensor_bytes(type, wsize);
  const int copies = int(std::max<std::size_t>(1, (std::size_t{256} << 20) / stored));
  std::vector<k::QuantMatrix> ws;
  for (int c = 0; c < copies; ++c) {
    const std::vector<float> w = random_floats(wsize, 100 + c);
    ws.push_back(k::QuantMatrix::quantize(type, w.data(), n, d));
  }
  std::vector<float> wf(wsize);
  for (int o = 0; o < d; ++o) ws[0].dequantize_row(o, wf.data() + std::size_t(o) * n);
  const int act_block = int(k::block_elements(type));
  const bool float_acts = type == k::TensorType::kF16 || type == k::TensorType::kBF16;
  bool all_ok = true;
  for (int T : tokens) {
    const std::vector<float> x = random_floats(std::size_t(T) * n, 7 + T);
    std::vector<float> ref(std::size_t(T) * d), r1(ref.size()), r2(ref.size()), y(ref.size());
    k::matmul_ref(ref.data(), x.data(), wf.data(), T, n, d);
    const k::QuantIsa isa = k::quant_isa_best();
    for (int v = 1; v <= k::matmul_quant_versions(); ++v) {
      std::fill(y.begin(), y.end(), NAN);
      k::matmul_quant_version(v, isa, y.data(), x.data(), ws[0], T);
      // Rung 1 against float within rounding; rungs 2 and 3 against rung 1 within half an
      // activation step per element (amax / 254 of each activation block, 32 numbers or the
      // K-quants' 256, times sum |w|; F16 and BF16 keep float activations), and 3 = 2.
      double max_err = 0.0;
      bool ok = true;
      for (int t = 0; t < T; ++t) {
        for (int o = 0; o < d; ++o) {
          const std::size_t i = std::size_t(t) * d + std::size_t(o);
          double bound = 1e-4 + 1e-4 * std::fabs(ref[i]);
          const double base = v == 1 ? ref[i] : r1[i];
          if (v > 1 && !float_acts) {
            const float* xt = x.data() + std::size_t(t) * n;
            for (int b = 0; b < n / act_block; ++b) {
              double amax = 0.0, wsum = 0.0;
              for (int j = act_block * b; j < act_block * (b + 1); ++j) {
                amax = std::max(amax, double(std::fabs(xt[j])));
                wsum += std::fabs(wf[std::size_t(o) * n + j]);
              }
              bound += wsum * amax / 254.0;
            }
          }
          const double err = std::fabs(double(y[i]) - base);
          max_err = std::max(max_err, err);
          if (!(err <= bound)) ok = false;
        }
      }
      if (v == 1) r1 = y;
      if (v == 2) r2 = y;
      const bool same_bits = v != 3 || std::memcmp(y.data(), r2.data(), y.size() * 4) == 0;
      ok = ok && same_bits;
      all_ok = all_ok && ok;
      std::vector<double> times;
      const int r_count = v == 1 && T > 16 ? 1 : reps;
      for (int r = 0; r <= r_count; ++r) {
        const std::size_t c = std::size_t(r) % ws.size();
        const double t0 = now_seconds();
        k::matmul_quant_version(v, isa, y.data(), x.data(), ws[c], T);
        if (r > 0) times.push_back(now_seconds() - t0);
      }
      const double t = median(times), t_best = *std::min_element(times.begin(), times.end());
      const double gflops = 2.0 * T * double(wsize) / t / 1e9;
      const double gbs = double(stored) / t / 1e9;
      char shape[48];
      std::snprintf(shape, sizeof shape, "%s %d x %d -> %d",
                    k::ggml_type_name(std::uint32_t(type)).c_str(), T, n, d);
      std::printf("%-26s %3d %10.1f %8.1f%% %9.1f %6.1f%% %9.1f  %s (max err %.1e%s)\n", shape, v,
                  gflops, 100.0 * gflops * 1e9 / roof.flops, gbs, 100.0 * gbs / roof.read_gbs,
                  2.0 * T * double(wsize) / t_best / 1e9, ok ? "PASS" : "FAIL", max_err,
                  v == 3 ? (same_bits ? ", bits = v2" : ", bits != v2") : "");
    }
  }
  return all_ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU matmul ladder: validate every version, then GFLOP/s vs the FMA peak"};
  int threads = 0, reps = 7;
  std::vector<int> tokens{1, 16, 64, 512};
  bool skip_ref = false, quant_only = false;
  std::vector<std::string> formats{"Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K", "F16", "BF16"};
  app.add_option("--threads", threads, "CPU threads (0 = OpenMP default)");
  app.add_option("--reps", reps, "timed repetitions per point (median reported)")
      ->capture_default_str();
  app.add_option("--tokens", tokens, "token counts T to run")->capture_default_str();
  app.add_flag("--skip-ref", skip_ref, "do not time matmul_ref (it is still the check)");
  app.add_option("--formats", formats, "storage formats of the quantized ladder (ggml names)")
      ->capture_default_str();
  app.add_flag("--quant-only", quant_only, "run only the quantized ladder");
  CLI11_PARSE(app, argc, argv);
  if (threads < 0 || reps < 1) {
    std::fprintf(stderr, "error: --threads must be >= 0 and --reps >= 1\n");
    return 1;
  }
  for (int T : tokens) {
    if (T < 1 || T > 4096) {
      std::fprintf(stderr, "error: --tokens: %d outside 1..4096\n", T);
      return 1;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  const int nth = omp_get_max_threads();
  // A roof is the best the machine can do: the best of three probes (on a shared machine one
  // probe can land on a busy moment).
  FmaPeakResult peak;
  BandwidthResult bw;
  for (int r = 0; r < 3; ++r) {
    const FmaPeakResult p = measure_fma_peak(nth);
    const BandwidthResult b = measure_read_bandwidth(std::size_t{512} << 20, nth);
    if (p.flops > peak.flops) peak = p;
    if (b.read_gbs > bw.read_gbs) bw = b;
  }
  std::printf(
      "== bench_matmul_cpu: %d threads, FMA peak %.1f GFLOP/s (%d-float vectors), "
      "read bandwidth %.1f GB/s\n",
      nth, peak.flops / 1e9, peak.vector_width, bw.read_gbs);
  std::printf(
      "versions: 0 matmul_ref, 1 lanes, 2 blocked (best on unpacked weights), 3 packed "
      "(weights packed once, as in the forward pass)\n\n");
  std::printf("%-22s %3s %10s %9s %9s %7s %9s  %s\n", "shape T x n -> d", "ver", "GFLOP/s", "% FMA",
              "GB/s W", "% BW", "best", "check");

  bool all_ok = true;
  // The two shapes of a stories110M feed-forward block (w1/w3: 768 -> 2048, w2: 2048 -> 768).
  const int shapes[][2] = {{768, 2048}, {2048, 768}};
  for (const auto& s : shapes) {
    if (quant_only) break;
    const int n = s[0], d = s[1];
    const std::size_t wsize = std::size_t(n) * d;
    // Enough weight copies to exceed the last-level cache several times over: a memory-bound
    // point then reads its weights from memory on every call, as in a real forward pass.
    const int copies = int(std::max<std::size_t>(1, (std::size_t{256} << 20) / (wsize * 4)));
    std::vector<std::vector<float>> ws;
    for (int c = 0; c < copies; ++c) ws.push_back(random_floats(wsize, 100 + c));
    std::vector<k::PackedMatrix> packed;
    for (const auto& w : ws) packed.emplace_back(w.data(), n, d);
    for (int T : tokens) {
      const std::vector<float> x = random_floats(std::size_t(T) * n, 7 + T);
      std::vector<float> ref(std::size_t(T) * d), y(ref.size()), first_fast(ref.size());
      k::matmul_ref(ref.data(), x.data(), ws[0].data(), T, n, d);
      for (int v = skip_ref ? 1 : 0; v <= k::matmul_cpu_versions(); ++v) {
        // Check: against the reference within float tolerance, and v2 bit for bit against v1
        // (they share one summation order; v3 has its own).
        std::fill(y.begin(), y.end(), NAN);
        run_version(v, y.data(), x.data(), ws[0].data(), packed[0], T, n, d);
        double max_err = 0.0;
        bool ok = true;
        for (std::size_t i = 0; i < y.size(); ++i) {
          const double err = std::fabs(double(y[i]) - ref[i]);
          max_err = std::max(max_err, err);
          if (!(err <= 1e-4 + 1e-4 * std::fabs(ref[i]))) ok = false;
        }
        if (v == 1) first_fast = y;
        const bool same_bits =
            v != 2 || std::memcmp(y.data(), first_fast.data(), y.size() * 4) == 0;
        ok = ok && same_bits;
        all_ok = all_ok && ok;
        // Time: one warm-up call, then the median of reps calls, each on the next weight copy.
        const int r_count = v == 0 ? 1 : reps;
        std::vector<double> times;
        for (int r = 0; r <= r_count; ++r) {
          const std::size_t c = std::size_t(r) % ws.size();
          const double t0 = now_seconds();
          run_version(v, y.data(), x.data(), ws[c].data(), packed[c], T, n, d);
          if (r > 0) times.push_back(now_seconds() - t0);
        }
        const double t = median(times), t_best = *std::min_element(times.begin(), times.end());
        const double gflops = 2.0 * T * double(wsize) / t / 1e9;
        const double gbs = 4.0 * double(wsize) / t / 1e9;
        char shape[32];
        std::snprintf(shape, sizeof shape, "%d x %d -> %d", T, n, d);
        std::printf("%-22s %3d %10.1f %8.1f%% %9.1f %6.1f%% %9.1f  %s (max err %.1e%s)\n", shape, v,
                    gflops, 100.0 * gflops * 1e9 / peak.flops, gbs, 100.0 * gbs / bw.read_gbs,
                    2.0 * T * double(wsize) / t_best / 1e9, ok ? "PASS" : "FAIL", max_err,
                    v == 2 ? (same_bits ? ", bits = v1" : ", bits != v1")
                           : v == 3 ? ", own order" : "");
      }
    }
  }
  std::vector<k::TensorType> types;
  for (const std::string& name : formats) {
    std::uint32_t id = 0;
    while (id < 64 && k::ggml_type_name(id) != name) ++id;
    if (id == 64 || !k::is_supported_tensor_type(id) || k::TensorType(id) == k::TensorType::kF32) {
      std::fprintf(stderr, "error: --formats %s: not a block format this build stores (%s)\n",
                   name.c_str(), k::supported_tensor_types());
      return 1;
    }
    types.push_back(k::TensorType(id));
  }
  std::printf(
      "\nquantized ladder (instruction set %s): 1 dequantize + float dot, 2 8-bit activations + "
      "integer dots (F16, BF16: float activations + float dots), 3 the same in tiles of tokens; "
      "GB/s of stored bytes\n",
      k::quant_isa_name(k::quant_isa_best()));
  for (k::TensorType type : types)
    for (const auto& s : shapes) all_ok = bench_quant(type, s[0], s[1], tokens, reps,
                                                      Roofs{peak.flops, bw.read_gbs}) && all_ok;
  std::printf(
      "\nMedians of the repetitions; 'best' is the fastest repetition, in GFLOP/s. Read "
      "GFLOP/s against the FMA peak for large T (compute-bound), GB/s against the read "
      "bandwidth for T = 1 (memory-bound).\n");
  return all_ok ? 0 : 1;
}
