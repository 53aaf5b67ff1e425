// Converts JSON-Schema-Test-Suite files into MaskBench files (one per test group), so that the
// suite can be run through `ch08_constrained_sampling --maskbench`. No Python needed.
//
//   inferlab_jsonschema_to_maskbench --out DIR SUITE_FILE_OR_DIR...
//
// A group of draft2020-12/type.json becomes DIR/draft2020-12-type-03.json (group index 3).
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "inferlab/constrain/maskbench.hpp"
#include "inferlab/base/error.hpp"

using namespace inferlab;

int main(int argc, char** argv) {
  CLI::App app{"Convert JSON-Schema-Test-Suite files into MaskBench files"};
  std::vector<std::string> inputs;
  std::string out;
  app.add_option("inputs", inputs, "test-suite files or directories")->required();
  app.add_option("--out", out, "output directory (created)")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::filesystem::create_directories(out);
    int written = 0;
    for (const std::string& path : list_json_files(inputs)) {
      std::ifstream in(path);
      nlohmann::ordered_json suite;
      try {
        suite = nlohmann::ordered_json::parse(in);
      } catch (const std::exception& e) {
        throw Error(fmt::format("'{}' is not valid JSON: {}", path, e.what()));
      }
      const std::filesystem::path p(path);
      const std::string prefix = p.parent_path().filename().string() + "-" + p.stem().string();
      const auto files = maskbench_from_test_suite(suite);
      for (std::size_t i = 0; i < files.size(); ++i) {
        std::ofstream o(std::filesystem::path(out) / fmt::format("{}-{:02d}.json", prefix, i));
        o << files[i].dump(1) << '\n';
        ++written;
      }
    }
    std::cout << "wrote " << written << " MaskBench files to " << out << '\n';
  } catch (const ParameterError& e) {
    // The core names its parameter (the chapter's --maskbench); here the paths are the inputs.
    std::cerr << "error: input " << e.problem() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
