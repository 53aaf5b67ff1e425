#include "test_support.hpp"

// Tests of the SVG plot writer (common/include/inferlab/app/svg.hpp): tick placement on linear and
// log axes, escaping, that every kind of element reaches the document, and that bad input
// (a value <= 0 on a log axis, mismatched lengths, nothing to plot) is an error, not a blank plot.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/app/plots.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/prefix_report.hpp"
#include "inferlab/analysis/roofline.hpp"
#include "inferlab/app/svg.hpp"
#include "inferlab/app/svg_read.hpp"
#include "inferlab/app/trace.hpp"
#include "inferlab/serving/workload.hpp"

using inferlab::AxisScale;
using inferlab::Error;
using inferlab::SvgPlot;
using inferlab::SvgStyle;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("linear ticks are 1/2/5 x 10^k multiples covering the range", "[unit][svg]") {
  CHECK(inferlab::linear_ticks(0.0, 10.0, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
  const auto unit = inferlab::linear_ticks(0.0, 1.0, 5);  // step 0.2
  REQUIRE(unit.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(unit[i] == Approx(0.2 * i).margin(1e-12));
  const auto t = inferlab::linear_ticks(3.0, 97.0, 6);  // step 20: 0, 20, ..., 100
  REQUIRE(t.front() == 0.0);
  REQUIRE(t.back() == 100.0);
  REQUIRE(t.size() == 6);
  const auto neg = inferlab::linear_ticks(-7.0, 7.0, 7);  // step 2, through an exact zero
  CHECK(neg.front() == -8.0);
  CHECK(neg.back() == 8.0);
  CHECK(std::count(neg.begin(), neg.end(), 0.0) == 1);
}

TEST_CASE("log ticks are whole decades, thinned when there are many", "[unit][svg]") {
  CHECK(inferlab::log_ticks(0.3, 2000.0) == std::vector<double>{0.1, 1, 10, 100, 1000, 10000});
  CHECK(inferlab::log_ticks(1.0, 100.0) == std::vector<double>{1, 10, 100});
  const auto wide = inferlab::log_ticks(1e-2, 1e16, 10);  // 18 decades: every 2nd
  REQUIRE(wide.size() == 10);
  CHECK(wide.front() == Approx(1e-2));
  CHECK(wide.back() == Approx(1e16));
  CHECK_THROWS_AS(inferlab::log_ticks(0.0, 10.0), Error);
}

TEST_CASE("tick labels are short and text is XML-escaped", "[unit][svg]") {
  CHECK(inferlab::format_tick(0.0) == "0");
  CHECK(inferlab::format_tick(0.5) == "0.5");
  CHECK(inferlab::format_tick(1000.0) == "1000");
  CHECK(inferlab::format_tick(1e6) == "1e+06");
  CHECK(inferlab::format_tick(1e-4) == "1e-04");
  CHECK(inferlab::xml_escape("a<b & \"c\" > 'd'") ==
        "a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;");
}

TEST_CASE("a roofline-like plot contains every element once", "[unit][svg]") {
  SvgPlot plot("Roofline <test>");
  plot.set_x_axis("arithmetic intensity (FLOP/byte)", AxisScale::log);
  plot.set_y_axis("attainable TFLOP/s", AxisScale::log);
  plot.add_segment(0.1, 0.335, 295.0, 989.0, "memory roof");
  plot.add_segment(295.0, 989.0, 1e4, 989.0, "compute roof");
  plot.add_vline(295.0, "ridge", {"#d62728", 1.0, true});
  plot.add_points("analytic", {1.0, 64.0}, {3.35, 214.4}, {}, {"B=1", "B=64"});
  plot.add_line("a line", {1.0, 10.0}, {1.0, 10.0});
  plot.add_text(2.0, 2.0, "note & more");
  const std::string svg = plot.render();

  REQUIRE(svg.rfind("<svg", 0) == 0);
  REQUIRE(svg.size() > 8);
  REQUIRE(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<svg") == count(svg, "</svg>"));
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK(svg.find("Roofline &lt;test&gt;") != std::string::npos);  // the title, escaped
  CHECK(svg.find("note &amp; more") != std::string::npos);
  CHECK(svg.find(">memory roof<") != std::string::npos);
  CHECK(svg.find(">compute roof<") != std::string::npos);
  CHECK(svg.find(">ridge<") != std::string::npos);
  CHECK(svg.find(">B=64<") != std::string::npos);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);  // the dashed ridge line
  CHECK(count(svg, "<circle") == 2 + 1);                     // two points + one legend swatch
  CHECK(count(svg, "<polyline") == 1);
  // The automatic log range rounds out to decades: 0.1 .. 1e4 on x, 0.1 .. 1000 on y.
  CHECK(svg.find(">10000<") != std::string::npos);
  CHECK(svg.find(">0.1<") != std::string::npos);
}

TEST_CASE("points map linearly onto the plot area", "[unit][svg]") {
  // Fixed ranges 0..10 on both axes: the point (5, 5) lands at the centre of the plot area,
  // whose corners are fixed by the margins (78, 44) .. (800-28, 500-58).
  SvgPlot plot("", 800, 500);
  plot.set_x_axis("x", AxisScale::linear, 0.0, 10.0);
  plot.set_y_axis("y", AxisScale::linear, 0.0, 10.0);
  plot.add_points("p", {5.0}, {5.0});
  const std::string svg = plot.render();
  const double cx = 78 + (800 - 28 - 78) / 2.0, cy = 44 + (500 - 58 - 44) / 2.0;
  std::ostringstream expected;
  expected << "cx=\"" << std::fixed << std::setprecision(2) << cx << "\" cy=\"" << cy << "\"";
  CHECK(svg.find(expected.str()) != std::string::npos);
}

TEST_CASE("rectangles and custom ticks: a Gantt chart", "[unit][svg]") {
  SvgPlot plot("schedule");
  plot.set_x_axis("time (ms)");
  plot.set_y_axis("sequence", AxisScale::linear, -0.5, 1.5);
  plot.set_y_ticks({0.0, 1.0}, {"seq 0", "seq 1"});
  plot.add_rect(0.0, -0.4, 12.0, 0.4, "prefill", {"#1f77b4", 1.0, false, 0.8});
  plot.add_rect(12.0, 0.6, 30.0, 1.4, "decode", {"#ff7f0e", 1.0, false, 0.8});
  plot.add_legend_entry("prefill", {"#1f77b4", 1.0, false, 0.8});
  const std::string svg = plot.render();
  CHECK(svg.find(">seq 1<") != std::string::npos);
  CHECK(svg.find(">decode<") != std::string::npos);
  CHECK(count(svg, "fill-opacity=\"0.8\"") >= 3);
  CHECK_THROWS_AS(plot.set_y_ticks({0.0, 1.0}, {"only one"}), Error);
}

TEST_CASE("bad plots are errors, not blank pictures", "[unit][svg]") {
  SvgPlot empty("nothing");
  CHECK_THROWS_AS(empty.render(), Error);

  SvgPlot log_plot("log");
  log_plot.set_x_axis("x", AxisScale::log);
  log_plot.add_line("l", {0.0, 1.0}, {1.0, 2.0});
  CHECK_THROWS_AS(log_plot.render(), Error);

  SvgPlot p("lengths");
  CHECK_THROWS_AS(p.add_line("l", {1.0, 2.0}, {1.0}), Error);
  CHECK_THROWS_AS(p.add_points("p", {1.0}, {1.0}, {}, {"a", "b"}), Error);
  CHECK_THROWS_AS(SvgPlot("tiny", 10, 10), Error);
}

TEST_CASE("save writes the rendered document", "[unit][svg]") {
  SvgPlot plot("saved");
  plot.add_line("l", {0.0, 1.0}, {0.0, 1.0});
  const auto path = std::filesystem::temp_directory_path() / "inferlab_test_svg.svg";
  plot.save(path.string());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == plot.render());
  std::filesystem::remove(path);
  CHECK_THROWS_AS(plot.save("/nonexistent-dir/x.svg"), Error);
}

// ---------------------------------------------------------------------------------------------
// Readable plots: no two texts of a chapter's plot overlap, every text lies inside the picture,
// and the picture is at most 1,200 px wide. Each chapter's plot is built by the core function the
// chapter calls, from a small run of the simulated engine (the roofline from the points
// chapter 03 draws), and checked through SvgPlot::text_boxes(), the boxes render() placed.
// ---------------------------------------------------------------------------------------------

namespace {

using inferlab::TextBox;

void check_readable(const SvgPlot& plot, const std::string& what, std::size_t min_texts) {
  INFO(what);
  const std::string svg = plot.render();
  const std::vector<TextBox> boxes = plot.text_boxes();
  const auto [width, height] = inferlab::svg_picture_size(svg);
  CHECK(width <= 1200);
  // Every <text> element has its box, and nothing else does.
  CHECK(count(svg, "<text ") == boxes.size());
  CHECK(boxes.size() >= min_texts);
  // The document says the same: its <text> elements read back give the same boxes (to the
  // 0.01 px the coordinates are written with), which is what inferlab_svg_check relies on.
  const std::vector<TextBox> read = inferlab::read_text_boxes(svg);
  REQUIRE(read.size() == boxes.size());
  std::size_t same = 0;
  for (const TextBox& r : read)
    for (const TextBox& b : boxes)
      if (r.text == b.text && std::abs(r.cx - b.cx) < 0.02 && std::abs(r.cy - b.cy) < 0.02 &&
          std::abs(r.half_w - b.half_w) < 0.02 && std::abs(r.angle - b.angle) < 0.01) {
        ++same;
        break;
      }
  CHECK(same == boxes.size());
  for (const TextBox& b : boxes) {
    INFO("text '" << b.text << "' centred at (" << b.cx << ", " << b.cy << ")");
    const double a = b.angle * 3.14159265358979 / 180;
    const double ex = std::abs(std::cos(a)) * b.half_w + std::abs(std::sin(a)) * b.half_h;
    const double ey = std::abs(std::sin(a)) * b.half_w + std::abs(std::cos(a)) * b.half_h;
    CHECK(b.cx - ex >= -0.5);
    CHECK(b.cx + ex <= width + 0.5);
    CHECK(b.cy - ey >= -0.5);
    CHECK(b.cy + ey <= height + 0.5);
  }
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      if (!inferlab::boxes_overlap(boxes[i], boxes[j])) continue;
      FAIL_CHECK("'" << boxes[i].text << "' overlaps '" << boxes[j].text << "'");
    }
}

inferlab::SimEngine h100_llama3_8b() {
  inferlab::SimEngine e;
  e.config = inferlab::named_config("llama3-8b");
  e.hardware = inferlab::hardware_by_name("h100-sxm");
  return e;
}

}  // namespace

TEST_CASE("text boxes: width from the character count, overlap of turned rectangles",
          "[unit][svg]") {
  CHECK(inferlab::text_width_px("abcd", 10.0) == Approx(4 * 6.2));
  CHECK(inferlab::text_width_px("I* ≈ 295", 10.0) == Approx(8 * 6.2));  // ≈ is one character
  const TextBox a{"a", 100, 100, 20, 5, 0};
  CHECK(inferlab::boxes_overlap(a, {"b", 130, 100, 15, 5, 0}));
  CHECK_FALSE(inferlab::boxes_overlap(a, {"b", 140, 100, 20, 5, 0}));  // edges touch: no overlap
  CHECK_FALSE(inferlab::boxes_overlap(a, {"b", 100, 111, 20, 5, 0}));
  // A vertical text beside a horizontal one: their axis-aligned hulls would overlap, they don't.
  CHECK_FALSE(inferlab::boxes_overlap({"v", 100, 100, 40, 5, 45}, {"h", 125, 75, 8, 5, 0}));
  CHECK(inferlab::boxes_overlap({"v", 100, 100, 40, 5, 90}, {"h", 100, 130, 8, 5, 0}));
}

TEST_CASE("labels that cannot all fit: the writer leaves some out, never overlaps", "[unit][svg]") {
  SvgPlot plot("crowded", 400, 300);
  plot.set_x_axis("x", AxisScale::linear, 0.0, 10.0);
  plot.set_y_axis("y", AxisScale::linear, 0.0, 10.0);
  std::vector<double> x, y;
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) {
    x.push_back(5.0 + 0.01 * i);
    y.push_back(5.0);
    names.push_back(fmt::format("point number {}", i));
  }
  plot.add_points("many", x, y, {}, names);
  check_readable(plot, "50 labels on one spot", 1);
  const std::string svg = plot.render();
  CHECK(count(svg, "point number") >= 1);
  CHECK(count(svg, "point number") < 50);
}

TEST_CASE("chapter 03: the rooflines are readable", "[svg][roofline]") {
  // A GPU from the table with the points chapter 03 draws for it (decode at B = 1 and 64, the
  // prefill, decode attention), and this machine with the measured points of a 2-core run.
  const inferlab::Hardware h100 = inferlab::hardware_by_name("h100-sxm");
  const auto I = [&](double i) { return inferlab::attainable_flops(h100, i); };
  check_readable(inferlab::roofline_plot(h100,
                                         {{"decode B=1", 1.0, I(1.0), false},
                                          {"decode B=64", 62.1, I(62.1), false},
                                          {"prefill 2000 tokens", 1011.9, I(1011.9), false},
                                          {"decode attention g=4 (model)", 4.0, I(4.0), false}},
                                         "Roofline of h100-sxm (bf16), llama3-8b"),
                 "roofline, h100-sxm", 12);
  inferlab::Hardware cpu{
      "this", "this machine (CPU, up to 2 threads)", "fp32", 32.0e9, 21.6e9, 0.0, true, "measured"};
  const auto C = [&](double i) { return inferlab::attainable_flops(cpu, i); };
  std::vector<inferlab::RooflinePoint> points;
  const std::vector<std::pair<std::string, double>> kernels = {{"linear B=1", 0.50},
                                                               {"linear B=8", 3.98},
                                                               {"linear B=64", 30.87},
                                                               {"linear B=512", 198.19},
                                                               {"attention GQA g=4 S=2048", 2.0},
                                                               {"attention MHA S=2048", 0.5}};
  const double measured[] = {0.60, 6.23, 13.88, 14.57, 1.50, 1.40};
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    points.push_back(
        {kernels[i].first + " (model)", kernels[i].second, C(kernels[i].second), false});
    points.push_back({kernels[i].first, kernels[i].second, measured[i] * 1e9, true});
  }
  for (auto [name, i, f] : {std::tuple{"stories110M prefill 512 tokens", 60.0, 12e9},
                            {"stories110M decode B=1", 0.5, 0.9e9},
                            {"stories110M decode B=4", 2.0, 3.1e9},
                            {"stories110M decode B=16", 7.9, 8.0e9},
                            {"stories110M decode B=64", 30.0, 11e9}})
    points.push_back({name, i, f, true});
  points.push_back({"decode attention g=12 (model)", 6.0, C(6.0), false});
  check_readable(inferlab::roofline_plot(cpu, points, "Roofline of this (fp32), stories110M"),
                 "roofline, this machine", 12);
}

TEST_CASE("chapter 04: the Gantt chart of 400 requests is readable", "[svg][engine]") {
  // Chapter 04's default simulated run: 400 requests at 40/s, static and continuous.
  inferlab::WorkloadSpec spec;
  spec.requests = 400;
  spec.rate = 40.0;
  spec.prompt = inferlab::parse_length_distribution("lognormal:96");
  spec.output = inferlab::parse_length_distribution("lognormal:128");
  const auto reqs = inferlab::generate_workload(spec);
  const inferlab::SimEngine e = h100_llama3_8b();
  const inferlab::EngineRun st =
      inferlab::run_sim(reqs, {inferlab::Policy::static_batching, 32, 1024}, e);
  const inferlab::EngineRun co =
      inferlab::run_sim(reqs, {inferlab::Policy::continuous, 32, 1024}, e);
  const SvgPlot gantt =
      inferlab::gantt_plot({&st, &co}, "Batch slots over time: llama3-8b on h100-sxm (sim clock)");
  check_readable(gantt, "Gantt, 400 requests", 10);
  // The running line has its own scale on the right: 0 and 32 for each band.
  const std::string svg = gantt.render();
  CHECK(svg.find(">running sequences<") != std::string::npos);
  CHECK(count(svg, ">32<") >= 2);
  // Some requests are named (the bars wide enough), not all 800 bars.
  CHECK(count(svg, ">r") > 0);
  CHECK(count(svg, ">r") < 800);
}

TEST_CASE("chapters 05 and 06: KV memory, block tables, TTFT and the trie are readable",
          "[svg][engine][paged][prefix]") {
  inferlab::SimEngine e = h100_llama3_8b();
  e.cost = inferlab::cost_options_for(e.hardware);
  e.memory.block_size = 16;
  e.memory.budget_bytes =
      inferlab::kv_storage_bytes_per_token(e.config, inferlab::DType::f32) * 16 * 512;
  inferlab::WorkloadSpec spec;
  spec.kind = inferlab::WorkloadKind::shared_prefix;
  spec.requests = 120;
  spec.rate = 20.0;
  spec.prompt = inferlab::parse_length_distribution("lognormal:48:0.5");
  spec.output = inferlab::parse_length_distribution("lognormal:32:0.5");
  spec.max_prompt = 96;
  spec.max_output = 64;
  const auto reqs = inferlab::generate_workload(spec);
  std::vector<inferlab::EngineRun> runs;
  e.memory.allocator = inferlab::Allocator::contiguous;
  runs.push_back(inferlab::run_sim(reqs, {inferlab::Policy::continuous, 16, 512}, e));
  e.memory.allocator = inferlab::Allocator::paged;
  runs.push_back(inferlab::run_sim(reqs, {inferlab::Policy::continuous, 16, 512}, e));
  check_readable(
      inferlab::kv_memory_plot({&runs[0], &runs[1]}, "KV memory over time: llama3-8b (sim clock)"),
      "KV memory", 8);
  check_readable(inferlab::block_table_plot(runs[1].peak_tables, 16), "block tables", 3);
  std::vector<inferlab::EngineRun> cached;
  for (auto cache : {inferlab::PrefixCacheKind::off, inferlab::PrefixCacheKind::hash,
                     inferlab::PrefixCacheKind::radix}) {
    e.memory.prefix_cache = cache;
    cached.push_back(inferlab::run_sim(reqs, {inferlab::Policy::continuous, 16, 512}, e));
  }
  check_readable(inferlab::ttft_cdf_plot(
                     {&cached[0], &cached[1], &cached[2]},
                     "Time to first token with and without a prefix cache: llama3-8b (sim clock)"),
                 "TTFT CDF", 8);
  REQUIRE_FALSE(cached[2].trie.empty());
  check_readable(inferlab::trie_plot(cached[2].trie,
                                     "The radix trie at the end of the run (tokens per edge, "
                                     "matches through the node)"),
                 "radix trie", 3);
}

TEST_CASE("plot titles name the model, not the folders it was read from", "[unit][svg]") {
  CHECK(inferlab::title_model_name("/work/shared/models/stories260K.bin") == "stories260K.bin");
  CHECK(inferlab::title_model_name("stories260K.bin") == "stories260K.bin");
  CHECK(inferlab::title_model_name("synthetic:stories260K(seed=1)") ==
        "synthetic:stories260K(seed=1)");
}
