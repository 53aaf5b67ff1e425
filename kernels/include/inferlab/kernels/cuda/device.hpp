#pragma once
/// @file device.hpp
/// @brief The CUDA device layer every chapter uses: one error-check macro, RAII device memory
/// and streams, and an honest answer to "is there a GPU here?".
///
/// This header is plain C++: it does not include cuda_runtime.h, so a g++-compiled chapter can
/// include it. The only CUDA type that appears is the stream handle, through the forward
/// declaration `struct CUstream_st` (cudaStream_t is a typedef for `CUstream_st*`).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "inferlab/kernels/error.hpp"

struct CUstream_st;

namespace inferlab::cuda {

/// @brief A CUDA stream handle (== cudaStream_t). nullptr is the default stream.
using StreamHandle = CUstream_st*;

/// @brief Throws inferlab::Error "CUDA error at FILE:LINE: EXPR: cudaErrorName (message)".
/// @param code a cudaError_t as int (non-zero)
/// @param expr the failed call as source text (`#expr` of INFERLAB_CUDA_CHECK)
/// @param file source file of the call (`__FILE__`)
/// @param line source line of the call (`__LINE__`)
[[noreturn]] void throw_cuda_error(int code, const char* expr, const char* file, int line);

/// @brief Evaluates @p expr (a CUDA runtime call returning cudaError_t) and throws
/// inferlab::Error naming the file, the line, the call and cudaGetErrorString when it fails.
#define INFERLAB_CUDA_CHECK(expr)                                                           \
  do {                                                                                      \
    const int inferlab_cuda_status_ = static_cast<int>(expr);                               \
    if (inferlab_cuda_status_ != 0)                                                         \
      ::inferlab::cuda::throw_cuda_error(inferlab_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

/// @brief True when the CUDA runtime finds a driver and at least one device. Otherwise false,
/// with the reason (no driver, no device, ...) in @p why when it is not null. Never throws.
bool cuda_device_available(std::string* why = nullptr);

/// @brief Throws inferlab::Error with a clear message ("--device cuda requested, but ...")
/// when no CUDA device can be used. Chapters call it when the user asks for `--device cuda`.
void require_cuda_device();

/// @brief What the benchmarks need to know about device 0.
struct DeviceInfo {
  std::string name;                     ///< e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;                     ///< streaming multiprocessors
  int cc_major = 0;                     ///< compute capability, major part (8: sm_80/86, 9: sm_90)
  int cc_minor = 0;                     ///< compute capability, minor part
  double sm_clock_ghz = 0.0;            ///< peak SM clock
  double peak_bandwidth_gbs = 0.0;      ///< memory clock * bus width * 2 (DDR) / 8
  double peak_fp32_tflops = 0.0;        ///< SMs * clock * FP32 lanes per SM * 2 (FMA)
  int fp32_lanes_per_sm = 0;            ///< from a table by compute capability (64 or 128)
  std::size_t global_memory_bytes = 0;  ///< total device memory, bytes
};
/// @brief Queries device 0 (throws if there is none).
DeviceInfo device_info();
/// @brief Device memory free now on the current device, bytes (cudaMemGetInfo): what an upload
/// took is the drop across it.
std::size_t device_free_bytes();

/// @name Raw device memory (used by DeviceBuffer; chapters use DeviceBuffer, never these)
/// @{

/// @brief Allocates @p bytes of device memory (uninitialised); throws inferlab::Error when the
/// allocation fails.
void* device_alloc(std::size_t bytes);
void device_free(void* ptr) noexcept;  ///< errors (e.g. at process exit) are ignored
/// @brief Host -> device copy. With a stream it is enqueued there and waited for, so the host
/// buffer may be reused as soon as this returns.
void copy_to_device(void* dst, const void* src, std::size_t bytes, StreamHandle stream = nullptr);
/// @brief Device -> host copy, complete when it returns.
void copy_to_host(void* dst, const void* src, std::size_t bytes, StreamHandle stream = nullptr);
/// @brief Device -> device copy, enqueued on @p stream (not waited for).
void copy_on_device(void* dst, const void* src, std::size_t bytes, StreamHandle stream = nullptr);
/// @brief Sets @p bytes to zero, enqueued on @p stream.
void device_memset_zero(void* dst, std::size_t bytes, StreamHandle stream = nullptr);
/// @brief Waits until all work on the device is done; rethrows asynchronous kernel errors.
void device_synchronize();
/// @}

/// @brief An owning, move-only array of @p T in device memory (RAII: freed by the destructor).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// @brief Allocates @p count elements (uninitialised).
  explicit DeviceBuffer(std::size_t count)
      : data_(count ? static_cast<T*>(device_alloc(count * sizeof(T))) : nullptr), size_(count) {}
  /// @brief Allocates and uploads a host vector.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    upload(host.data(), host.size());
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// @brief Takes @p other's memory; @p other is left empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  /// @brief Frees this buffer's memory, then takes @p other's; @p other is left empty.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      device_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { device_free(data_); }

  T* data() { return data_; }                              ///< device pointer (nullptr when empty)
  const T* data() const { return data_; }                  ///< device pointer (nullptr when empty)
  std::size_t size() const { return size_; }               ///< number of elements
  std::size_t bytes() const { return size_ * sizeof(T); }  ///< size() * sizeof(T)
  bool empty() const { return size_ == 0; }                ///< true when no memory is held

  /// @brief Copies @p count host elements into elements [offset, offset + count).
  /// @throws inferlab::Error if that range exceeds size().
  void upload(const T* host, std::size_t count, std::size_t offset = 0,
              StreamHandle stream = nullptr) {
    check_range(count, offset, "upload");
    if (count) copy_to_device(data_ + offset, host, count * sizeof(T), stream);
  }
  /// @brief Copies all of @p host into elements [0, host.size()).
  /// @throws inferlab::Error if the buffer is smaller than @p host.
  void upload(const std::vector<T>& host, StreamHandle stream = nullptr) {
    upload(host.data(), host.size(), 0, stream);
  }
  /// @brief Copies elements [offset, offset + count) to @p host.
  void download(T* host, std::size_t count, std::size_t offset = 0,
                StreamHandle stream = nullptr) const {
    check_range(count, offset, "download");
    if (count) copy_to_host(host, data_ + offset, count * sizeof(T), stream);
  }
  /// @brief The whole buffer as a host vector.
  std::vector<T> to_host(StreamHandle stream = nullptr) const {
    std::vector<T> out(size_);
    download(out.data(), size_, 0, stream);
    return out;
  }
  /// @brief Sets every byte to zero, enqueued on @p stream (not waited for).
  void zero(StreamHandle stream = nullptr) {
    if (size_) device_memset_zero(data_, bytes(), stream);
  }

 private:
  void check_range(std::size_t count, std::size_t offset, const char* what) const {
    if (offset > size_ || count > size_ - offset) {
      throw Error(std::string("DeviceBuffer::") + what + ": elements [" +
                              std::to_string(offset) + ", " + std::to_string(offset + count) +
                              ") outside a buffer of " + std::to_string(size_));
    }
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// @brief An owning CUDA stream (created blocking, so it also orders with the legacy default
/// stream). Move-only.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// @brief Takes @p other's stream; @p other is left holding none.
  Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// @brief Destroys this stream, then takes @p other's; @p other is left holding none.
  Stream& operator=(Stream&& other) noexcept;
  /// @brief The raw handle, to pass to kernels and copies (owned by this object).
  StreamHandle get() const { return handle_; }
  /// @brief Waits for the work enqueued so far; rethrows asynchronous errors.
  void synchronize() const;

 private:
  StreamHandle handle_ = nullptr;
};

/// @brief Times GPU work with a pair of CUDA events on one stream (for the benchmarks).
class EventTimer {
 public:
  /// @brief Creates the two events; they are recorded on @p stream (nullptr: default stream).
  explicit EventTimer(StreamHandle stream = nullptr);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// @brief Records the start event on the stream (does not wait).
  void start();
  /// @brief Records the stop event, waits for it and returns the milliseconds since start().
  float stop_ms();

 private:
  StreamHandle stream_;
  void* start_ = nullptr;  // cudaEvent_t, kept opaque here
  void* stop_ = nullptr;
};

}  // namespace inferlab::cuda
