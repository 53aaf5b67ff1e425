// Converts JSON-Schema-Test-Suite files into MaskBench files (one per test group), so that the
// suite can be run through `ch08_constrained_sampling --maskbench`. No Python needed.
//
//   inferlab_jsonschema_to_maskbench --out DIR SUITE_FILE_OR_DIR...
//
// A group of draft2020-12/type.json becomes DIR/draft2020-12-type-03.json (group index 3).
// Every input is read and converted before anything is written, and every file is written
// atomically: a failure leaves no file behind (nor DIR, when this run created it).
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/constrained_cli.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/constrain/maskbench.hpp"

using namespace inferlab;

namespace {

namespace fs = std::filesystem;

// A test-suite file far larger than the suite's largest is refused before it is read.
constexpr std::size_t kMaxSuiteFileBytes = std::size_t(64) << 20;

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string json_problem(const std::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const std::size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

// The output name of group @p index of @p path: "<folder>-<stem>-NN.json", or "<stem>-NN.json"
// for a file named without a folder (never a name starting with '-').
std::string output_name(const std::string& path, std::size_t index) {
  const fs::path p(path);
  const std::string folder = fs::absolute(p).parent_path().filename().string();
  const std::string prefix = folder.empty() ? p.stem().string() : folder + "-" + p.stem().string();
  std::string name = fmt::format("{}-{:02d}.json", prefix, index);
  if (name.front() == '-' || name.front() == '.') name.insert(0, "suite");
  return name;
}

struct Output {
  std::string source;  // the input it came from
  std::string text;    // the MaskBench file
};

// Reads and converts every input, by output name; nothing is written yet.
std::map<std::string, Output> convert(const std::vector<std::string>& inputs) {
  std::map<std::string, Output> out;
  for (const std::string& path : maskbench_input_files(inputs, "input")) {
    const std::string text = read_regular_file(path, "input", kMaxSuiteFileBytes);
    // Checked: a value nested deeper than kMaxJsonInputDepth is refused before any recursive
    // walk (serialising the groups) could overflow the stack.
    const nlohmann::ordered_json suite = parse_json_input(text, fmt::format("input '{}'", path));
    std::vector<nlohmann::ordered_json> files;
    try {
      files = maskbench_from_test_suite(suite);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("input '{}' is not a JSON-Schema-Test-Suite file (an array of "
                              "{{\"schema\", \"tests\": [{{\"data\", \"valid\"}}]}} groups): {}",
                              path, json_problem(e)));
    } catch (const Error& e) {
      throw Error(fmt::format("input '{}': {}", path, e.what()));
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::string name = output_name(path, i);
      const auto [it, fresh] = out.try_emplace(name, Output{path, files[i].dump(1) + "\n"});
      if (!fresh) {
        throw Error(fmt::format("inputs '{}' and '{}' would both write '{}': give files from "
                                "folders of different names",
                                it->second.source, path, name));
      }
    }
  }
  return out;
}

// --out: an existing folder, or one this run may create (its parent exists and is a folder).
// @return true if the folder must be created.
bool check_out_folder(const std::string& out) {
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw Error(fmt::format("--out '{}' exists and is not a folder", out));
    require_writable_output((fs::path(out) / "x.json").string(), "--out");
    return false;
  }
  // Missing: its parent must be a writable folder (a loop or a missing parent is named).
  require_writable_output(out, "--out");
  return true;
}

int run(const std::vector<std::string>& inputs, const std::string& out) {
  const bool create = check_out_folder(out);
  const std::map<std::string, Output> files = convert(inputs);
  if (std::error_code err; create && !fs::create_directory(out, err))
    throw Error(fmt::format("--out '{}': cannot create the folder: {}", out, err.message()));
  std::vector<fs::path> written;
  try {
    for (const auto& [name, file] : files) {
      const fs::path path = fs::path(out) / name;
      write_file_atomically(path.string(), file.text, "--out");
      written.push_back(path);
    }
  } catch (...) {
    std::error_code ignored;
    for (const fs::path& p : written) fs::remove(p, ignored);
    if (create) fs::remove(out, ignored);
    throw;
  }
  std::cout << "wrote " << files.size() << " MaskBench files to " << out << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Convert JSON-Schema-Test-Suite files into MaskBench files"};
  std::vector<std::string> inputs;
  std::string out;
  app.add_option("inputs", inputs, "test-suite files or directories")->required();
  app.add_option("--out", out, "output directory (created if missing; its parent must exist)")
      ->required();
  set_parameter_flag("maskbench", "input");  // list_json_files() names the inputs so
  return run_main(app, argc, argv, [&] { return run(inputs, out); });
}
