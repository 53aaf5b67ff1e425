// Device selection: the CPU always, CUDA when built in and present.
#include "inferlab/base/device.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#ifdef INFERLAB_HAVE_CUDA
#include "inferlab/kernels/cuda/device.hpp"
#endif

namespace inferlab {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda" || name == "gpu") return Device::cuda;
  throw Error(fmt::format("unknown device '{}' (choose cpu or cuda)", name));
}

const char* device_name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

bool cuda_backend_built() {
#ifdef INFERLAB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void require_device(Device device) {
  if (device == Device::cpu) return;
#ifdef INFERLAB_HAVE_CUDA
  std::string why;
  if (!cuda::cuda_device_available(&why)) {
    throw Error(fmt::format("--device cuda: no usable CUDA device on this machine ({}); run with "
                            "--device cpu",
                            why));
  }
#else
  throw Error("--device cuda: this build has no CUDA backend (nvcc was not found when it was "
              "configured). Install the CUDA toolkit and configure with -DINFERLAB_CUDA=ON (or "
              "the 'cuda' preset), or run with --device cpu");
#endif
}

}  // namespace inferlab
