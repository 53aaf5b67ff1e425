// Loading the CUDA backend module with dlopen, only when the GPU is asked for.
#include "inferlab/base/cuda_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// The folder of the running executable, from /proc/self/exe ("" if it cannot be read).
std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  const std::string path(buf, static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// The module, opened once per process: its handle, or why it could not be opened.
struct Loaded {
  void* handle = nullptr;
  std::string why;
};

const Loaded& loaded_module() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = cuda_module_path();
    // RTLD_LOCAL: the module's symbols (its own copy of the few core classes it uses) stay its own.
    loaded.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (loaded.handle == nullptr) {
      const char* err = dlerror();
      loaded.why = err != nullptr ? err : path + ": cannot be loaded";
    }
  });
  return loaded;
}

[[noreturn]] void throw_no_module(const std::string& why) {
  throw ParameterError(
      "device",
      fmt::format("cuda: no CUDA backend: the CUDA backend ({}) is not built or cannot be loaded "
                  "({}). Build it with the CUDA toolkit installed (-DINFERLAB_CUDA=ON or the "
                  "'cuda' preset) or point INFERLAB_CUDA_BACKEND at it; or run on device cpu",
                  kCudaModuleName, why));
}

}  // namespace

std::string cuda_module_path() {
  if (const char* env = std::getenv("INFERLAB_CUDA_BACKEND"); env != nullptr && *env != '\0')
    return env;
  const std::string dir = executable_dir();
  return dir.empty() ? kCudaModuleName : dir + "/" + kCudaModuleName;
}

void* cuda_module_function(const char* name) {
  const Loaded& m = loaded_module();
  if (m.handle == nullptr) throw_no_module(m.why);
  void* f = dlsym(m.handle, name);
  if (f == nullptr) throw_no_module(fmt::format("{} has no function {}", cuda_module_path(), name));
  return f;
}

bool cuda_module_loads() { return loaded_module().handle != nullptr; }

}  // namespace inferlab
