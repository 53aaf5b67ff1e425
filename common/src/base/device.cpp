// Device selection: the CPU always, CUDA when its backend module loads and finds a GPU.
#include "inferlab/base/device.hpp"

#include <cstddef>

#include <fmt/format.h>

#include "inferlab/base/cuda_module.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda" || name == "gpu") return Device::cuda;
  throw Error(fmt::format("unknown device '{}' (choose cpu or cuda)", name));
}

const char* device_name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

bool cuda_backend_built() { return cuda_module_loads(); }

void require_device(Device device) {
  if (device == Device::cpu) return;
  // The module's C interface (runtime/cuda_backend.hpp), by name: base sits below runtime.
  using Abi = int (*)();
  using Available = int (*)(char*, std::size_t);
  const auto abi = reinterpret_cast<Abi>(cuda_module_function("inferlab_cuda_backend_abi"));
  if (abi() != kCudaModuleAbi) {
    throw ParameterError(
        "device", fmt::format("cuda: {} was built from other sources (interface version "
                              "{}, this program expects {}); rebuild it",
                              cuda_module_path(), abi(), kCudaModuleAbi));
  }
  const auto available =
      reinterpret_cast<Available>(cuda_module_function("inferlab_cuda_backend_device_available"));
  char why[512] = "";
  if (available(why, sizeof(why)) == 0) {
    throw ParameterError(
        "device",
        fmt::format("cuda: no usable CUDA device on this machine ({}); run on device cpu", why));
  }
}

}  // namespace inferlab
