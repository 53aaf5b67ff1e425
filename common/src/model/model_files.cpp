// Locating model and tokenizer files.
#include "inferlab/model/model_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

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

std::string find_model(const std::string& requested, const std::string& parameter) {
  std::string name = requested.empty() ? kDefaultModel : requested;
  // An explicit path (anything with a directory part, or a name that exists as given) wins; it
  // must be a regular file (a FIFO would block the loader, a directory or a loop is a mistake).
  std::error_code ec;
  if (fs::path(name).has_parent_path() ||
      fs::symlink_status(name, ec).type() != fs::file_type::not_found) {
    require_regular_file(name, "model file");
    return name;
  }
  const bool short_name = name == "smollm2";
  if (short_name) name = kSmolLM2Model;
  for (const auto& dir : search_dirs()) {
    if (fs::exists(dir / name, ec)) return (dir / name).string();
  }
  throw ParameterError(
      parameter,
      fmt::format("{}: not found (searched {}): get it with scripts/download_models.sh{}, "
                  "give its path, set INFERLAB_MODELS=/folder, or run on random weights of "
                  "stories260K's shape (synthetic)",
                  name, model_search_path_description(), short_name ? " --smollm2" : ""));
}

std::string find_tokenizer(const std::string& requested, const std::string& model_path,
                           int vocab_size) {
  if (!requested.empty()) {
    std::error_code ec;
    if (fs::path(requested).has_parent_path() ||
        fs::symlink_status(requested, ec).type() != fs::file_type::not_found) {
      require_regular_file(requested, "tokenizer file");
      return requested;
    }
    for (const auto& dir : search_dirs())
      if (fs::exists(dir / requested, ec)) return (dir / requested).string();
    throw Error(fmt::format("tokenizer file '{}' not found (searched {})", requested,
                            model_search_path_description()));
  }
  const char* name = vocab_size == 512     ? "tok512.bin"
                     : vocab_size == 32000 ? "tokenizer.bin"
                                           : nullptr;
  if (!name) return "";
  std::vector<fs::path> dirs;
  if (!model_path.empty()) dirs.push_back(fs::path(model_path).parent_path());
  for (const auto& d : search_dirs()) dirs.push_back(d);
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (fs::exists(dir / name, ec)) return (dir / name).string();
  }
  return "";
}

}  // namespace inferlab
