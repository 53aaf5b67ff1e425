#pragma once
/// @file svg.hpp
/// @brief A small dependency-free SVG plot writer: the chapters draw their lessons with it
/// (step latency against position, the roofline, a scheduler's Gantt chart).
///
/// A plot is a rectangle of data coordinates mapped onto a fixed-size picture. You add
/// *series* (lines or scattered points, each with a legend entry), *reference lines*
/// (horizontal, vertical, or a segment between two data points: on log-log axes a segment is a
/// power law, so the roofline's sloped memory roof y = bandwidth * x is one segment),
/// *rectangles* (bars of a Gantt chart) and *text*. Nothing is drawn until render(): only then
/// are the axis ranges known (unless you fixed them), because every element contributes to them.
///
/// Example, a roofline:
/// @code
///   SvgPlot plot("Roofline: H100 SXM");
///   plot.set_x_axis("arithmetic intensity (FLOP/byte)", AxisScale::log);
///   plot.set_y_axis("attainable TFLOP/s", AxisScale::log);
///   plot.add_segment(0.1, 0.335, 295.0, 989.0, "memory roof: 3.35 TB/s");
///   plot.add_segment(295.0, 989.0, 1e4, 989.0, "compute roof: 989 TFLOP/s");
///   plot.add_points("decode, batch 1", {1.0}, {3.35}, {}, {"B=1"});
///   plot.save("roofline.svg");
/// @endcode
///
/// All coordinates given to the add_* functions are data coordinates; the writer clips
/// everything to the plot area. On a log axis every value must be > 0 (render() throws
/// inferlab::Error otherwise, rather than silently dropping a point).
///
/// Where each text goes is decided by the label placer (svg_labels.hpp); a saved picture is read
/// back by svg_read.hpp.

#include <limits>
#include <string>
#include <vector>

#include "inferlab/app/svg_labels.hpp"

namespace inferlab {

/// @brief How data values map onto an axis.
enum class AxisScale {
  linear,  ///< equal distances for equal differences
  log,     ///< equal distances for equal ratios (base-10 ticks); values must be > 0
};

/// @brief Where the legend box sits: in a corner of the plot area, or @c above it (one row of
/// entries between the title and the plot, which never covers data), or nowhere.
enum class LegendPosition { top_left, top_right, bottom_left, bottom_right, above, none };

/// @brief How a line, a point or a rectangle is painted.
struct SvgStyle {
  std::string color;     ///< any SVG colour ("#1f77b4", "red"); empty = next palette colour
  double width = 2.0;    ///< stroke width in pixels (lines), or the point radius (points)
  bool dashed = false;   ///< draw the stroke dashed (reference lines, predictions)
  double opacity = 1.0;  ///< 0..1, fill opacity for rectangles, stroke opacity for lines
};

/// @brief A plot being built; render() or save() turns it into an SVG document.
class SvgPlot {
 public:
  /// @param title  drawn centred above the plot area (may be empty)
  /// @param width, height  size of the picture in pixels
  explicit SvgPlot(std::string title, int width = 800, int height = 500);

  /// @brief Label and scale of the horizontal axis; @p min / @p max fix its range (NaN = fit
  /// the data, rounded out to ticks).
  void set_x_axis(std::string label, AxisScale scale = AxisScale::linear, double min = kAuto,
                  double max = kAuto);
  /// @brief The same for the vertical axis.
  void set_y_axis(std::string label, AxisScale scale = AxisScale::linear, double min = kAuto,
                  double max = kAuto);
  /// @brief Replace the automatic ticks of an axis by these positions and labels (a Gantt chart
  /// names its rows "seq 0", "seq 1", ...). @p labels empty = format the values.
  void set_x_ticks(std::vector<double> values, std::vector<std::string> labels = {});
  /// @brief The same for the vertical axis.
  void set_y_ticks(std::vector<double> values, std::vector<std::string> labels = {});
  /// @brief Where the legend box goes (default top_left); LegendPosition::none hides it.
  void set_legend(LegendPosition position) { legend_ = position; }

  /// @brief A polyline through (x[i], y[i]) in the given order, with a legend entry.
  /// @throws inferlab::Error if x and y differ in length.
  void add_line(std::string label, std::vector<double> x, std::vector<double> y,
                SvgStyle style = {});
  /// @brief Scattered points (circles) with a legend entry; @p point_labels, if not empty, has
  /// one text per point, written beside it where there is room (empty strings allowed; see
  /// text_boxes()).
  /// @throws inferlab::Error if the lengths differ.
  void add_points(std::string label, std::vector<double> x, std::vector<double> y,
                  SvgStyle style = {}, std::vector<std::string> point_labels = {});
  /// @brief A horizontal reference line across the whole plot at height @p y, labelled at its
  /// right end (an empty label draws none; reference lines do not enter the legend).
  void add_hline(double y, std::string label, SvgStyle style = {});
  /// @brief A vertical reference line at @p x, labelled at its top.
  void add_vline(double x, std::string label, SvgStyle style = {});
  /// @brief A straight segment from (x0, y0) to (x1, y1) in data coordinates, labelled along
  /// it near its middle. On log-log axes this draws y = c * x^k through both points.
  void add_segment(double x0, double y0, double x1, double y1, std::string label,
                   SvgStyle style = {});
  /// @brief A filled rectangle with corners (x0, y0) and (x1, y1), text centred inside (e.g. a
  /// Gantt bar: x = start..end time, y = row - 0.4 .. row + 0.4). Not in the legend; use
  /// add_legend_entry() to explain colours.
  void add_rect(double x0, double y0, double x1, double y1, std::string text, SvgStyle style = {});
  /// @brief Text at data point (x, y).
  void add_text(double x, double y, std::string text, TextAnchor anchor = TextAnchor::start,
                std::string color = "#333333", int font_size = 12);
  /// @brief A legend entry with no data: a coloured swatch and its label.
  void add_legend_entry(std::string label, SvgStyle style);

  /// @brief The complete SVG document (UTF-8 text, starts with "<svg", ends with "</svg>\n").
  /// @throws inferlab::Error if nothing determines a range, or a log axis meets a value <= 0.
  std::string render() const;
  /// @brief render() written to @p path atomically (all or nothing).
  /// @throws inferlab::Error naming --plot and the path if the file cannot be written.
  void save(const std::string& path) const;
  /// @brief Every text render() places (title, axis and tick labels, legend, labels of lines,
  /// points and bars), as boxes in pixels. Labels are placed so that no two of these overlap and
  /// all lie inside the picture: a label with no free place is left out (a Gantt chart of 400
  /// requests names only the bars wide enough), and a tick label that would overlap its
  /// neighbour is skipped. The tests check the result on every chapter's plot.
  /// @throws inferlab::Error as render() does
  std::vector<TextBox> text_boxes() const;

  /// @brief A second scale on the right edge of the plot: labels at heights @p values of the
  /// vertical axis, and a rotated @p label. For a quantity drawn over the main one (a Gantt
  /// chart's "running sequences" line over its slot rows).
  /// @throws inferlab::Error if the lengths differ
  void set_right_ticks(std::vector<double> values, std::vector<std::string> labels,
                       std::string label);

  /// Marker for "fit this bound to the data".
  static constexpr double kAuto = std::numeric_limits<double>::quiet_NaN();

 private:
  struct Axis {
    std::string label;
    AxisScale scale = AxisScale::linear;
    double min, max;
    std::vector<double> tick_values;
    std::vector<std::string> tick_labels;
  };
  enum class Kind { line, points, hline, vline, segment, rect, text, legend_only };
  struct Item {
    Kind kind;
    std::string label;
    std::vector<double> x, y;
    std::vector<std::string> texts;
    SvgStyle style;
    TextAnchor anchor = TextAnchor::start;
    int font_size = 12;
  };
  std::string next_colour();
  std::string render_impl(std::vector<TextBox>* boxes) const;
  class Renderer;  // render()'s steps: axes, layout, grid, ticks, legend, data, labels

  std::string title_;
  int width_, height_;
  Axis x_axis_, y_axis_;
  std::vector<double> right_tick_values_;  ///< set_right_ticks(): heights on the y axis
  std::vector<std::string> right_tick_labels_;
  std::string right_label_;
  LegendPosition legend_ = LegendPosition::top_left;
  std::vector<Item> items_;
  int palette_index_ = 0;
};

/// @brief "Nice" tick positions covering [lo, hi] on a linear axis: multiples of 1, 2 or 5
/// times a power of ten, about @p target of them, first <= lo and last >= hi.
std::vector<double> linear_ticks(double lo, double hi, int target = 6);
/// @brief Powers of ten covering [lo, hi] (lo > 0): 10^floor(log10 lo) .. 10^ceil(log10 hi),
/// thinned to every 2nd, 3rd... decade when there would be more than @p max_ticks.
std::vector<double> log_ticks(double lo, double hi, int max_ticks = 10);
/// @brief A short tick label: "0.5", "20", "1000", "1e+06" style only beyond 1e5 or below 1e-3.
std::string format_tick(double value);
/// @brief A model's name as a plot title shows it: Model::name() is the file path for a model
/// read from a file, and a title need not carry the folders of the machine it ran on, so a path
/// is cut to its file name ("stories260K.bin"); any other name is returned unchanged.
std::string title_model_name(const std::string& model_name);

}  // namespace inferlab
