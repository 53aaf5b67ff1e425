#pragma once
// Helpers shared by the tests: locating model and golden files, skipping honestly, comparing
// floats the llm.c way.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

namespace inferlab::test {

/// Directory holding the shared model files, from $INFERLAB_MODELS (else the repo's models/).
inline std::filesystem::path models_dir() {
  if (const char* env = std::getenv("INFERLAB_MODELS"); env && *env) return env;
  return std::filesystem::path(INFERLAB_SOURCE_DIR) / "models";
}

/// Directory of the golden reference outputs: $INFERLAB_GOLDEN, else <models>/../golden.
inline std::filesystem::path golden_dir() {
  if (const char* env = std::getenv("INFERLAB_GOLDEN"); env && *env) return env;
  return models_dir() / ".." / "golden";
}

inline bool models_required() {
  const char* env = std::getenv("INFERLAB_REQUIRE_MODELS");
  return env && std::string(env) == "1";
}

/// Returns @p path if it exists. Otherwise the test FAILS when INFERLAB_REQUIRE_MODELS=1, and is
/// SKIPPED (message + exit code INFERLAB_SKIP_CODE, which CTest counts as skipped) elsewhere.
inline std::string require_file(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) return path.string();
  if (models_required()) {
    FAIL("required data file missing: " << path.string()
                                        << " (INFERLAB_REQUIRE_MODELS=1; set INFERLAB_MODELS)");
  }
  std::printf("SKIPPED: %s not found (set INFERLAB_MODELS to the folder holding the models, "
              "or run scripts/download_models.sh)\n",
              path.string().c_str());
  std::fflush(stdout);
  std::exit(INFERLAB_SKIP_CODE);
}

inline std::string model_file(const std::string& name) { return require_file(models_dir() / name); }
inline std::string golden_file(const std::string& name) { return require_file(golden_dir() / name); }

/// |a - e| <= atol + rtol * |e|, non-finite expected values skipped (llm.c's rule).
struct CloseReport {
  bool ok = true;
  double max_abs_err = 0.0;
  long first_bad = -1;
};
template <class A, class B>
CloseReport all_close(const A& actual, const B& expected, long n, double atol, double rtol) {
  CloseReport r;
  for (long i = 0; i < n; ++i) {
    const double e = expected[i], a = actual[i];
    if (!std::isfinite(e)) continue;
    const double err = std::fabs(a - e);
    if (err > r.max_abs_err) r.max_abs_err = err;
    if (!(err <= atol + rtol * std::fabs(e)) && r.ok) {
      r.ok = false;
      r.first_bad = i;
    }
  }
  return r;
}

}  // namespace inferlab::test
