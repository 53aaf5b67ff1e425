// Locating model and tokenizer files.
#include "inferlab/model_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "inferlab/error.hpp"

namespace inferlab {

namespace fs = std::filesystem;

namespace {

// Directories searched for a bare file name, in order.
std::vector<fs::path> search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("INFERLAB_MODELS"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back(fs::path(INFERLAB_SOURCE_DIR) / "models");
  return dirs;
}

}  // namespace

std::string model_search_path_description() {
  std::string s;
  const char* env = std::getenv("INFERLAB_MODELS");
  s += fmt::format("$INFERLAB_MODELS ({})", env && *env ? env : "not set");
  s += fmt::format(", then {}", (fs::path(INFERLAB_SOURCE_DIR) / "models").string());
  return s;
}

std::string find_model(const std::string& requested) {
  const std::string name = requested.empty() ? kDefaultModel : requested;
  // An explicit path (anything with a directory part, or a file that exists as given) wins.
  if (fs::exists(name)) return name;
  if (fs::path(name).has_parent_path()) {
    throw Error(fmt::format("model file '{}' does not exist", name));
  }
  for (const auto& dir : search_dirs()) {
    if (fs::exists(dir / name)) return (dir / name).string();
  }
  throw Error(fmt::format(
      "model '{}' not found. Searched: {}.\n"
      "  Get the models:        scripts/download_models.sh   (fills models/)\n"
      "  Or point to them:      --model PATH, or export INFERLAB_MODELS=/folder/with/models\n"
      "  Or run without files:  --synthetic stories260K   (random weights, real shape)",
      name, model_search_path_description()));
}

std::string find_tokenizer(const std::string& requested, const std::string& model_path,
                           int vocab_size) {
  if (!requested.empty()) {
    if (fs::exists(requested)) return requested;
    if (!fs::path(requested).has_parent_path()) {
      for (const auto& dir : search_dirs())
        if (fs::exists(dir / requested)) return (dir / requested).string();
    }
    throw Error(fmt::format("tokenizer file '{}' does not exist", requested));
  }
  const char* name = vocab_size == 512 ? "tok512.bin" : vocab_size == 32000 ? "tokenizer.bin" : nullptr;
  if (!name) return "";
  std::vector<fs::path> dirs;
  if (!model_path.empty()) dirs.push_back(fs::path(model_path).parent_path());
  for (const auto& d : search_dirs()) dirs.push_back(d);
  for (const auto& dir : dirs) {
    if (fs::exists(dir / name)) return (dir / name).string();
  }
  return "";
}

}  // namespace inferlab
