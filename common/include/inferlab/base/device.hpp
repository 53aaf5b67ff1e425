#pragma once
/// @file device.hpp
/// @brief Which device runs the forward pass: the CPU (always) or a CUDA GPU (when the build
/// has the CUDA backend and the machine has a usable GPU).

#include <string>

namespace inferlab {

/// @brief Where the forward pass runs.
enum class Device {
  cpu,   ///< the Eigen/OpenMP kernels of kernels/src
  cuda,  ///< the CUDA kernels of kernels/cuda (weights uploaded once, logits copied back)
};

/// @brief Parses "cpu" or "cuda". @throws inferlab::Error naming the valid choices.
Device parse_device(const std::string& name);
/// @brief "cpu" or "cuda".
const char* device_name(Device device);
/// @brief True when this build contains the CUDA backend (configured with nvcc).
bool cuda_backend_built();
/// @brief Throws inferlab::Error with a clear reason unless @p device can run here: CUDA needs
/// a build with the CUDA backend and a machine with a usable GPU and driver.
void require_device(Device device);

}  // namespace inferlab
