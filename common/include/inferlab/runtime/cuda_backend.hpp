#pragma once
/// @file cuda_backend.hpp
/// @brief The C interface of the CUDA backend module (libinferlab_cuda_backend.so), the only
/// way the core reaches the GPU. The core loads the module with dlopen when `--device cuda`
/// asks for it (base/cuda_module.hpp) and looks these functions up by name.
///
/// No exception crosses the boundary: a failure returns 0 or nullptr and writes its reason into
/// the caller's buffer. The runner the factory returns is a C++ object built by the same
/// compiler from the same sources (kCudaModuleAbi checks that), so its calls may throw
/// inferlab::Error as every runner does.

#include <cstddef>

#include "inferlab/base/cuda_module.hpp"

namespace inferlab {
class Model;
class ModelRunner;
}  // namespace inferlab

extern "C" {

/// @brief The module's kCudaModuleAbi.
int inferlab_cuda_backend_abi();

/// @brief 1 when a usable CUDA device and driver are present, else 0 with the reason in
/// @p why (at most @p why_size bytes, NUL-terminated).
int inferlab_cuda_backend_device_available(char* why, std::size_t why_size);

/// @brief A new CUDA model runner for @p model (weights uploaded once); the caller owns it and
/// deletes it (the runner's destructor is virtual). nullptr with the reason in @p error when it
/// cannot be made (no device, no memory, unusable dimensions).
inferlab::ModelRunner* inferlab_cuda_backend_make_runner(const inferlab::Model* model, char* error,
                                                         std::size_t error_size);
}
