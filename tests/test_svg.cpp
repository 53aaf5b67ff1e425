#include "test_support.hpp"

// Tests of the SVG plot writer (common/include/inferlab/svg.hpp): tick placement on linear and
// log axes, escaping, that every kind of element reaches the document, and that bad input
// (a value <= 0 on a log axis, mismatched lengths, nothing to plot) is an error, not a blank plot.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "inferlab/error.hpp"
#include "inferlab/svg.hpp"

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
  CHECK(inferlab::xml_escape("a<b & \"c\" > 'd'") == "a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;");
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
