// The device layer: error reporting, raw memory, streams, events, device queries.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "common.cuh"
#include "inferlab/kernels/cuda/device.hpp"

namespace inferlab::cuda {

void throw_cuda_error(int code, const char* expr, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  throw Error(std::string("CUDA error at ") + file + ":" + std::to_string(line) +
                           ": " + expr + ": " + cudaGetErrorName(err) + " (" +
                           cudaGetErrorString(err) + ")");
}

void throw_cublas_error(int status, const char* expr, const char* file, int line) {
  throw Error(std::string("cuBLAS error at ") + file + ":" + std::to_string(line) +
                           ": " + expr + ": " +
                           cublasGetStatusString(static_cast<cublasStatus_t>(status)));
}

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    cudaGetLastError();  // reset the last-error state so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "the CUDA runtime found no device";
    return false;
  }
  if (why) why->clear();
  return true;
}

void require_cuda_device() {
  std::string why;
  if (!cuda_device_available(&why))
    throw ParameterError("device", "cuda: no CUDA device can be used: " + why);
}

namespace {
// FP32 lanes (CUDA cores) per SM, by compute capability. An approximation for the peak: it
// ignores boost-clock variation and assumes every lane issues one FMA (2 FLOPs) per cycle.
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 8 && minor == 0) return 64;  // A100
  if (major == 7) return 64;                // V100, T4
  if (major == 6 && minor == 0) return 64;  // P100
  return 128;                               // 6.1, 8.6, 8.9, 9.0 (H100/H200), 10.x, 12.x
}
}  // namespace

DeviceInfo device_info() {
  int device = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  INFERLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  DeviceInfo info;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.sm_clock_ghz = clock_khz * 1e-6;
  // Double data rate: two transfers per memory clock, bus_bits / 8 bytes per transfer.
  info.peak_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) * 1e-9;
  info.fp32_lanes_per_sm = fp32_lanes_per_sm(prop.major, prop.minor);
  info.peak_fp32_tflops =
      double(info.sm_count) * clock_khz * 1e3 * info.fp32_lanes_per_sm * 2.0 * 1e-12;
  return info;
}

std::size_t device_free_bytes() {
  std::size_t free = 0, total = 0;
  INFERLAB_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

void* device_alloc(std::size_t bytes) {
  void* ptr = nullptr;
  INFERLAB_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  return ptr;
}

void device_free(void* ptr) noexcept {
  if (ptr) cudaFree(ptr);  // at process exit the runtime may already be gone: ignore errors
}

void copy_to_device(void* dst, const void* src, std::size_t bytes, StreamHandle stream) {
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, StreamHandle stream) {
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_on_device(void* dst, const void* src, std::size_t bytes, StreamHandle stream) {
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

void device_memset_zero(void* dst, std::size_t bytes, StreamHandle stream) {
  INFERLAB_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream));
}

void device_synchronize() { INFERLAB_CUDA_CHECK(cudaDeviceSynchronize()); }

Stream::Stream() { INFERLAB_CUDA_CHECK(cudaStreamCreate(&handle_)); }

Stream::~Stream() {
  if (handle_) cudaStreamDestroy(handle_);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (handle_) cudaStreamDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const { INFERLAB_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

EventTimer::EventTimer(StreamHandle stream) : stream_(stream) {
  cudaEvent_t a = nullptr, b = nullptr;
  INFERLAB_CUDA_CHECK(cudaEventCreate(&a));
  const cudaError_t err = cudaEventCreate(&b);
  if (err != cudaSuccess) {
    cudaEventDestroy(a);
    INFERLAB_CUDA_CHECK(err);
  }
  start_ = a;
  stop_ = b;
}

EventTimer::~EventTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

void EventTimer::start() {
  INFERLAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), stream_));
}

float EventTimer::stop_ms() {
  INFERLAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), stream_));
  INFERLAB_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0.0f;
  INFERLAB_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return ms;
}

}  // namespace inferlab::cuda
