#pragma once
/// @file cuda_module.hpp
/// @brief Finds and loads the CUDA backend, a separately built shared module
/// (libinferlab_cuda_backend.so), the first time something asks for the GPU.
///
/// The core and the chapters do not link the CUDA runtime or cuBLAS: a CPU run never maps them
/// (about 200 MB of resident memory and 0.05 s of start-up saved). The module is looked for at
///  1. the path in the environment variable INFERLAB_CUDA_BACKEND, when set;
///  2. next to the running executable (where the build puts it: build/bin/).
/// Its C interface is declared in runtime/cuda_backend.hpp.

#include <string>

namespace inferlab {

/// @brief The file name of the CUDA backend module.
inline constexpr const char* kCudaModuleName = "libinferlab_cuda_backend.so";

/// @brief The version of the module's interface: bumped whenever it, ModelRunner or KVPool
/// changes shape. A module reporting another version is refused (it was built from other sources).
inline constexpr int kCudaModuleAbi = 2;

/// @brief Where the module is looked for: $INFERLAB_CUDA_BACKEND, else the executable's folder.
std::string cuda_module_path();

/// @brief The module's exported function @p name, loading the module on first use (it stays
/// loaded until the process ends).
/// @throws inferlab::Error "--device cuda: no CUDA backend ..." naming the path tried and why
///         it could not be loaded (not built, or built from other sources).
void* cuda_module_function(const char* name);

/// @brief True when the module loads (it says nothing about a GPU being present).
bool cuda_module_loads();

}  // namespace inferlab
