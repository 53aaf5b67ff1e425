// The CUDA quantized matmul (Q8_0, Q4_0 with __dp4a) against its CPU reference, and the CPU
// reference against the float product of the dequantized weights.
#include <cstdint>
#include <sstream>
#include <vector>

#include "gpu_test_support.hpp"
#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/quant_formats.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;
using cuda::DeviceBuffer;

TEST_CASE("quantized matmul: the CUDA kernels equal their CPU reference", "[gpu][kernel][quant]") {
  test::require_gpu();
  struct Shape {
    int T, n, d;
  };
  const Shape shapes[] = {{1, 32, 1}, {1, 4096, 33}, {5, 96, 31}, {17, 1056, 257}};
  for (k::TensorType type : {k::TensorType::kQ8_0, k::TensorType::kQ4_0}) {
    for (const Shape& s : shapes) {
      const auto wf = test::random_floats(std::size_t(s.d) * s.n, -1, 1, 2);
      const auto x = test::random_floats(std::size_t(s.T) * s.n, -1, 1, 3);
      std::vector<std::uint8_t> w(k::tensor_bytes(type, wf.size()));
      k::quantize_ref(type, wf.data(), w.data(), wf.size());
      std::vector<float> want(std::size_t(s.T) * s.d), deq(wf.size()), dense(want.size());
      k::matmul_quant_cuda_ref(want.data(), x.data(), w.data(), type, s.T, s.n, s.d);
      // The reference is the float product up to the activations' rounding (half a step of
      // amax / 127 per element): loose against float, exact-order-free against the GPU.
      k::dequantize_ref(type, w.data(), deq.data(), deq.size());
      k::matmul_ref(dense.data(), x.data(), deq.data(), s.T, s.n, s.d);
      std::ostringstream what;
      what << k::ggml_type_name(std::uint32_t(type)) << " T=" << s.T << " n=" << s.n
           << " d=" << s.d;
      CHECK(test::check_close(what.str() + " ref vs float", want, dense, 0.05, 0.05));
      DeviceBuffer<float> dx(x), dy(want.size());
      DeviceBuffer<std::uint8_t> dw(w);
      k::matmul_quant_cuda(dy.data(), dx.data(), dw.data(), type, s.T, s.n, s.d);
      const std::vector<float> got = dy.to_host();
      CHECK(test::check_close(what.str() + " cuda vs ref", got, want, 1e-4, 1e-4));
      // The forward pass's form: a workspace of exactly the size asked, no wait in the call.
      // Same kernels, same order: the same bits.
      DeviceBuffer<std::uint8_t> ws(k::matmul_quant_cuda_workspace_bytes(s.T, s.n));
      DeviceBuffer<float> dy2(want.size());
      k::matmul_quant_cuda(dy2.data(), dx.data(), dw.data(), type, s.T, s.n, s.d, ws.data(),
                           ws.size());
      CHECK(dy2.to_host() == got);
      CHECK_THROWS_WITH(k::matmul_quant_cuda(dy2.data(), dx.data(), dw.data(), type, s.T, s.n,
                                             s.d, ws.data(), ws.size() - 1),
                        Catch::Contains("workspace is smaller"));
    }
  }
  std::vector<float> y(1), x(32);
  std::vector<std::uint8_t> w(k::tensor_bytes(k::TensorType::kQ4_1, 32));
  CHECK_THROWS_WITH(k::matmul_quant_cuda_ref(y.data(), x.data(), w.data(), k::TensorType::kQ4_1,
                                             1, 32, 1),
                    Catch::Contains("no CUDA kernel for Q4_1"));
}
