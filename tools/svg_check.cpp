// inferlab_svg_check: checks plots the chapters saved (--plot) the way tests/test_svg.cpp checks
// the plot objects: every picture at most 1,200 px wide, every text inside its picture, no two
// texts overlapping. A file stacked from several plots (chapters 05, 06) is checked picture by
// picture. Prints one line per fault and exits 1 if there is any.
//
//   inferlab_svg_check FILE.svg [FILE.svg ...]
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/app/svg_labels.hpp"
#include "inferlab/app/svg_read.hpp"

namespace {

int check(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw inferlab::Error("cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  int faults = 0;
  for (const std::string& svg : inferlab::svg_pictures(text.str())) {
    const std::vector<inferlab::TextBox> boxes = inferlab::read_text_boxes(svg);
    if (boxes.empty()) continue;
    const auto [width, height] = inferlab::svg_picture_size(svg);
    if (width > 1200) {
      std::printf("%s: the picture is %d px wide (at most 1200)\n", path.c_str(), width);
      ++faults;
    }
    for (const inferlab::TextBox& b : boxes) {
      if (!inferlab::box_inside(b, width, height, 0.5)) {
        std::printf("%s: '%s' runs off the %d x %d picture\n", path.c_str(), b.text.c_str(), width,
                    height);
        ++faults;
      }
    }
    for (std::size_t i = 0; i < boxes.size(); ++i)
      for (std::size_t j = i + 1; j < boxes.size(); ++j) {
        // The positions in the file are rounded to 0.01 px: shrink by that before comparing.
        inferlab::TextBox p = boxes[i], q = boxes[j];
        p.half_w -= 0.02, p.half_h -= 0.02, q.half_w -= 0.02, q.half_h -= 0.02;
        if (!inferlab::boxes_overlap(p, q)) continue;
        std::printf("%s: '%s' overlaps '%s'\n", path.c_str(), p.text.c_str(), q.text.c_str());
        ++faults;
      }
    std::printf("%s: %zu texts checked\n", path.c_str(), boxes.size());
  }
  return faults;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Checks saved InferLab plots: width <= 1200 px, texts inside, no two overlapping"};
  std::vector<std::string> files;
  app.add_option("files", files, "SVG files written by a chapter's --plot")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    int faults = 0;
    for (const std::string& f : files) faults += check(f);
    return faults == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
