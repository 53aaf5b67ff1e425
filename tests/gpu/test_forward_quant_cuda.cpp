// The CUDA forward pass on weights stored as Q8_0 and Q4_0 blocks (uploaded as blocks,
// multiplied by the dp4a kernels, embedding rows dequantized on the device) against the CPU
// forward pass on the same blocks; the row dequantization against its CPU twin; and a format
// without a CUDA kernel refused by name.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/runner.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

namespace {

// Logits bound (absolute; SmolLM2's logits are O(20)), the same for both formats. The two
// devices quantize the same activations to int8 blocks and take the same integer block dots;
// they differ by float rounding (the order the block terms are added, the float ops between
// the matmuls), which can move an activation across a rounding boundary of its block: one step
// (amax / 127) on one input of one layer, far below this bound on a logit.
constexpr double kLogitTol = 2.5e-2;

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

TEST_CASE("dequantize rows: the CUDA kernel equals its CPU twin bit for bit",
          "[gpu][kernel][quant]") {
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
  // SmolLM2 quantized at load (--weights q8_0 / q4_0): a trained model, whose greedy choices
  // are rarely near-ties (the stories260K file cannot be stored in blocks of 32: its FFN rows
  // hold 172 numbers; random synthetic weights give near-flat logits).
  const std::string path = test::model_file("SmolLM2-135M-Instruct.Q4_1.gguf");
  const std::vector<int> prompt =
      Tokenizer::load(path).encode("Once upon a time, there was a little girl named Lily.", false);
  for (WeightFormat format : {WeightFormat::q8_0, WeightFormat::q4_0}) {
    INFO("--weights " << weight_format_name(format));
    const Model model = Model::load(path, LoadOptions{format});
    REQUIRE_FALSE(model.float_weights());
    const auto cpu = make_runner(model, Device::cpu);
    // The upload holds the blocks as stored, no float copy (that would be 4 bytes per weight,
    // 3.8x Q8_0's and 7x Q4_0's): the device memory it takes is the blocks' bytes plus the
    // norms and allocation rounding. The first query sets up the CUDA context, not counted.
    const std::size_t free_before = cuda::device_free_bytes();
    const auto gpu = make_runner(model, Device::cuda);
    const double held = double(free_before) - double(cuda::device_free_bytes());
    // CpuLinears::bytes() counts a tied classifier, which is the embedding's blocks.
    const double blocks =
        double(model.cpu_linears().bytes()) +
        (model.config().shared_classifier ? 0.0 : double(model.stored_embedding().bytes()));
    INFO("device memory taken by the upload: " << held / 1e6 << " MB, blocks " << blocks / 1e6
                                               << " MB");
    CHECK(held < 1.1 * blocks + 32e6);

    // 1. The prompt in one prefill with every row of logits (the T > 1 path of every matmul).
    KVCache cpu_cache = make_cache(*cpu), gpu_cache = make_cache(*gpu);
    std::vector<float> want, got;
    run_sequence(*cpu, prompt, 0, cpu_cache, LogitsMode::all, want);
    run_sequence(*gpu, prompt, 0, gpu_cache, LogitsMode::all, got);
    CHECK(test::check_close("prefill logits", got, want, kLogitTol, 0.0));

    // 2. 16 greedy steps, both devices fed the CPU's choice. Each step's logits within the
    //    bound, and the same argmax wherever the CPU's top-2 margin exceeds twice the bound
    //    (logits within it cannot then reorder the top two). This prompt has no such near-tie
    //    in Q8_0 and one in Q4_0 (measured on the CPU); more would make the check too weak.
    const int V = model.config().vocab_size;
    std::vector<float> cpu_last(want.end() - V, want.end()), gpu_last(got.end() - V, got.end());
    int near_ties = 0;
    for (int step = 0; step < 16; ++step) {
      INFO("greedy step " << step);
      const int token = argmax_of(cpu_last);
      if (top2_margin(cpu_last) > 2 * kLogitTol) {
        CHECK(argmax_of(gpu_last) == token);
      } else {
        ++near_ties;
      }
      const int pos = int(prompt.size()) + step;
      run_sequence(*cpu, std::vector<int>{token}, pos, cpu_cache, LogitsMode::last, cpu_last);
      run_sequence(*gpu, std::vector<int>{token}, pos, gpu_cache, LogitsMode::last, gpu_last);
      CHECK(test::check_close("decode logits", gpu_last, cpu_last, kLogitTol, 0.0));
    }
    CHECK(near_ties <= 1);
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
