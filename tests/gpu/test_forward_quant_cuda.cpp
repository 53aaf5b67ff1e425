// The CUDA forward pass on weights stored as Q8_0 and Q4_0 blocks (uploaded as blocks,
// multiplied by the dp4a kernels, embedding rows dequantized on the device) against the CPU
// forward pass on the same blocks; the row dequantization against its CPU twin; and a format
// without a CUDA kernel refused by name.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu_test_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/runner.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

namespace {

// Logits bound (absolute plus relative to the CPU's value), the same for both formats. The two
// devices quantize the same activations to int8 blocks and take the same integer block dots;
// they differ by float rounding (the order the block terms are added, the float ops between
// the matmuls), which can move an activation across a rounding boundary of its block: one step
// (amax / 127) on one input, a change far below this bound on a logit.
constexpr double kLogitAtol = 1e-2, kLogitRtol = 1e-2;

// The model of the test: stories15M's shape (dim 288 and hidden 768, whole blocks of 32; the
// real stories260K's hidden 172 is not), synthetic weights, stored as @p format at build.
Model quantized_model(WeightFormat format) {
  SyntheticOptions opt;
  opt.weights = format;
  return make_synthetic_model("stories15M", opt);
}

// Largest minus second largest.
float top2_margin(std::vector<float> x) {
  const auto top = std::max_element(x.begin(), x.end());
  const float best = *top;
  *top = -INFINITY;
  return best - *std::max_element(x.begin(), x.end());
}

int argmax_of(const std::vector<float>& x) {
  return int(std::max_element(x.begin(), x.end()) - x.begin());
}

}  // namespace

TEST_CASE("dequantize rows: the CUDA kernel equals its CPU twin bit for bit", "[gpu][kernel][quant]") {
  test::require_gpu();
  const int n = 96, d = 33;
  const std::vector<int> rows = {0, 32, 7, 7, 1};
  for (k::TensorType type : {k::TensorType::kQ8_0, k::TensorType::kQ4_0}) {
    INFO(k::ggml_type_name(std::uint32_t(type)));
    const auto wf = test::random_floats(std::size_t(d) * n, -2, 2, 5);
    std::vector<std::uint8_t> w(k::tensor_bytes(type, wf.size()));
    k::quantize_ref(type, wf.data(), w.data(), wf.size());
    std::vector<float> want(rows.size() * n);
    k::dequantize_rows_cuda_ref(want.data(), w.data(), type, rows.data(), int(rows.size()), n, d);
    cuda::DeviceBuffer<std::uint8_t> dw(w);
    cuda::DeviceBuffer<int> drows(rows);
    cuda::DeviceBuffer<float> dx(want.size());
    k::dequantize_rows_cuda(dx.data(), dw.data(), type, drows.data(), int(rows.size()), n, d);
    CHECK(dx.to_host() == want);
  }
}

TEST_CASE("CUDA forward on Q8_0 and Q4_0 weights matches the CPU forward on the same blocks",
          "[gpu][quant][transformer]") {
  test::require_gpu();
  for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::q4_0}) {
    INFO("--weights " << weight_format_name(format));
    const Model model = quantized_model(format);
    REQUIRE_FALSE(model.float_weights());
    const auto cpu = make_runner(model, Device::cpu);
    const auto gpu = make_runner(model, Device::cuda);

    // 1. A prefill of 8 tokens with every row of logits (the T > 1 path of every matmul).
    const std::vector<int> prompt = {1, 403, 4083, 263, 931, 29892, 727, 471};
    KVCache cpu_cache = make_cache(*cpu), gpu_cache = make_cache(*gpu);
    std::vector<float> want, got;
    run_sequence(*cpu, prompt, 0, cpu_cache, LogitsMode::all, want);
    run_sequence(*gpu, prompt, 0, gpu_cache, LogitsMode::all, got);
    CHECK(test::check_close("prefill logits", got, want, kLogitAtol, kLogitRtol));

    // 2. 16 greedy tokens, the GPU's argmax taken on the device, both devices fed the same
    //    token. The CPU's top-2 margin must exceed twice the bound at every step (logits within
    //    the bound cannot then reorder the top two): equal tokens are required, not likely.
    const int V = model.config().vocab_size;
    std::vector<float> cpu_last(want.end() - V, want.end());
    int gpu_next = argmax_of(std::vector<float>(got.end() - V, got.end()));
    std::vector<int> next;
    for (int step = 0; step < 16; ++step) {
      INFO("greedy step " << step);
      const int cpu_next = argmax_of(cpu_last);
      const double bound = kLogitAtol + kLogitRtol * std::fabs(cpu_last[std::size_t(cpu_next)]);
      REQUIRE(top2_margin(cpu_last) > 2 * bound);
      REQUIRE(gpu_next == cpu_next);
      const int pos = int(prompt.size()) + step;
      const std::vector<int> token = {cpu_next};
      run_sequence(*cpu, token, pos, cpu_cache, LogitsMode::last, cpu_last);
      const BatchEntry entry{token, pos, &gpu_cache};
      gpu->step_greedy(std::span<const BatchEntry>(&entry, 1), next);
      gpu_next = next[0];
    }
  }
}

TEST_CASE("CUDA runner refuses weights without a CUDA kernel, naming the format",
          "[gpu][quant][runner]") {
  test::require_gpu();
  SyntheticOptions opt;
  opt.weights = WeightFormat::q4_1;
  opt.max_layers = 1;
  const Model model = make_synthetic_model("stories15M", opt);
  REQUIRE_THROWS_WITH(make_runner(model, Device::cuda),
                      Catch::Contains("is stored as Q4_1: no CUDA kernel for it") &&
                          Catch::Contains("the CUDA backend runs f32, q8_0 and q4_0 weights"));
}
