// The device layer: RAII buffers, streams, and error reporting.
#include <cstring>

#include "gpu_test_support.hpp"

using namespace inferlab;
using cuda::DeviceBuffer;

TEST_CASE("DeviceBuffer uploads, downloads, moves and checks its bounds", "[gpu][device]") {
  test::require_gpu();
  const std::vector<float> host = test::random_floats(4097, -1, 1, 1);
  DeviceBuffer<float> a(host);
  REQUIRE(a.size() == 4097);
  REQUIRE(a.bytes() == 4097 * sizeof(float));
  CHECK(a.to_host() == host);

  DeviceBuffer<float> b = std::move(a);
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  CHECK(b.to_host() == host);

  cuda::Stream stream;
  std::vector<float> part(31, 7.0f);
  b.upload(part.data(), part.size(), 100, stream.get());
  std::vector<float> back(31);
  b.download(back.data(), back.size(), 100, stream.get());
  CHECK(back == part);

  REQUIRE_THROWS_AS(b.upload(part.data(), part.size(), 4097 - 30), Error);
  REQUIRE_THROWS_AS(b.download(back.data(), 1, 4097), Error);
  b.zero();
  CHECK(b.to_host() == std::vector<float>(4097, 0.0f));
}

TEST_CASE("INFERLAB_CUDA_CHECK reports the file, the line and the CUDA error string",
          "[gpu][device]") {
  test::require_gpu();
  // 1 is cudaErrorInvalidValue: "invalid argument".
  try {
    INFERLAB_CUDA_CHECK(1);
    FAIL("no exception");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("test_device.cpp") != std::string::npos);
    CHECK(msg.find("cudaErrorInvalidValue") != std::string::npos);
    CHECK(msg.find("invalid argument") != std::string::npos);
  }
  CHECK_NOTHROW(cuda::require_cuda_device());
  const cuda::DeviceInfo info = cuda::device_info();
  CHECK(info.sm_count > 0);
  CHECK(info.peak_bandwidth_gbs > 0);
  CHECK(info.peak_fp32_tflops > 0);
}
