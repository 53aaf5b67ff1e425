#pragma once
// Helpers shared by the tests: locating model and golden files, skipping honestly, comparing
// floats the llm.c way.

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace inferlab::test {

/// Directory holding the shared model files, from $INFERLAB_MODELS (else the repo's models/).
inline std::filesystem::path models_dir() {
  if (const char* env = std::getenv("INFERLAB_MODELS"); env && *env) return env;
  return std::filesystem::path(INFERLAB_SOURCE_DIR) / "models";
}

/// Directory of the golden reference outputs (llama2.c's and SentencePiece's): $INFERLAB_GOLDEN,
/// else the repository's tests/golden/, where scripts/make_golden.sh writes them (git-ignored),
/// else a golden/ folder beside the models folder (the layout of a shared data disk).
inline std::filesystem::path golden_dir() {
  if (const char* env = std::getenv("INFERLAB_GOLDEN"); env && *env) return env;
  const auto in_repo = std::filesystem::path(INFERLAB_SOURCE_DIR) / "tests" / "golden";
  const auto beside_models = models_dir() / ".." / "golden";
  // make_golden.sh writes all the files at once: one of them says whether it has run.
  if (!std::filesystem::exists(in_repo / "stories260K_greedy.json") &&
      std::filesystem::exists(beside_models))
    return beside_models;
  return in_repo;
}

inline bool models_required() {
  const char* env = std::getenv("INFERLAB_REQUIRE_MODELS");
  return env && std::string(env) == "1";
}

/// How to get the model files, for the messages below.
inline constexpr const char* kHowToGetModels =
    "set INFERLAB_MODELS to the folder holding the models, or run scripts/download_models.sh";
/// How to get the golden files, for the messages below.
inline constexpr const char* kHowToGetGolden =
    "set INFERLAB_GOLDEN to the folder holding llama2.c's reference outputs, or run "
    "scripts/make_golden.sh (needs the internet) to write them into tests/golden/";

/// Returns @p path if it exists. Otherwise the test FAILS when INFERLAB_REQUIRE_MODELS=1, and is
/// SKIPPED (message + exit code INFERLAB_SKIP_CODE, which CTest counts as skipped) elsewhere.
/// @p how_to_get says where the file comes from.
inline std::string require_file(const std::filesystem::path& path,
                                const char* how_to_get = kHowToGetModels) {
  if (std::filesystem::exists(path)) return path.string();
  if (models_required()) {
    FAIL("required data file missing: " << path.string() << " (INFERLAB_REQUIRE_MODELS=1; "
                                        << how_to_get << ")");
  }
  std::printf("SKIPPED: %s not found (%s)\n", path.string().c_str(), how_to_get);
  std::fflush(stdout);
  std::exit(INFERLAB_SKIP_CODE);
}

inline std::string model_file(const std::string& name) { return require_file(models_dir() / name); }
inline std::string golden_file(const std::string& name) {
  return require_file(golden_dir() / name, kHowToGetGolden);
}

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

/// A file in the temporary folder, `inferlab_<tag>_<pid><extension>`, removed at the end of the
/// scope (the process id keeps two test processes apart; the tag, two files of one test).
struct TempFile {
  std::filesystem::path path;  ///< where the file is (it need not exist yet)
  explicit TempFile(const std::string& tag, const std::string& extension = ".bin")
      : path(std::filesystem::temp_directory_path() /
             ("inferlab_" + tag + "_" + std::to_string(::getpid()) + extension)) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string str() const { return path.string(); }  ///< the path as a string
  /// Writes @p bytes as the whole file.
  void write(const std::vector<char>& bytes) const {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
};

}  // namespace inferlab::test
