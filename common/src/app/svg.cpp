// The SVG plot writer: collects items in data coordinates, fixes the axis ranges at render time,
// maps every item onto the picture and clips it to the plot area.
#include "inferlab/app/svg.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

namespace {

// Tableau's 10 colours: distinguishable, and the default of most plotting libraries.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Picture margins around the plot area, in pixels: room for tick labels, axis labels, title.
constexpr double kMarginLeft = 78, kMarginRight = 28, kMarginTop = 44, kMarginBottom = 58;

// One axis with its range resolved: maps data values to [0, 1] along the axis.
struct ResolvedAxis {
  AxisScale scale;
  double lo, hi;
  std::vector<double> ticks;
  std::vector<std::string> labels;
  double unit(double v) const {
    if (scale == AxisScale::log)
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
};

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  // Steps of 1, 2 or 5 times a power of ten read naturally: 0, 20, 40 ... not 0, 17, 34.
  const double step = (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double i = first; i <= last + 0.5; i += 1.0) {
    double v = i * step;  // multiply, not accumulate: no drift after many steps
    if (std::abs(v) < step * 1e-9) v = 0.0;
    ticks.push_back(v);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0.0) || !(hi >= lo)) throw Error("log_ticks: need 0 < lo <= hi");
  const int e0 = int(std::floor(std::log10(lo) + 1e-9));
  int e1 = int(std::ceil(std::log10(hi) - 1e-9));
  if (e1 == e0) ++e1;
  const int decades = e1 - e0;
  const int m = std::max(max_ticks - 1, 1);
  const int stride = std::max(1, (decades + m - 1) / m);  // ceil(decades / m): at most m + 1 ticks
  std::vector<double> ticks;
  for (int e = e0; e <= e1; e += stride) ticks.push_back(std::pow(10.0, e));
  if (ticks.back() < hi)
    ticks.push_back(std::pow(10.0, e0 + ((decades + stride - 1) / stride) * stride));
  return ticks;
}

std::string format_tick(double value) {
  if (value == 0.0) return "0";
  const double a = std::abs(value);
  if (a >= 1e-3 && a < 1e5) return fmt::format("{:g}", value);
  return fmt::format("{:.0e}", value);  // "1e+06": short, unambiguous
}

SvgPlot::SvgPlot(std::string title, int width, int height)
    : title_(std::move(title)), width_(width), height_(height) {
  if (width < 200 || height < 150)
    throw Error("SvgPlot: the picture must be at least 200 x 150 px");
  x_axis_.min = x_axis_.max = y_axis_.min = y_axis_.max = kAuto;
}

void SvgPlot::set_x_axis(std::string label, AxisScale scale, double min, double max) {
  x_axis_.label = std::move(label);
  x_axis_.scale = scale;
  x_axis_.min = min;
  x_axis_.max = max;
}

void SvgPlot::set_y_axis(std::string label, AxisScale scale, double min, double max) {
  y_axis_.label = std::move(label);
  y_axis_.scale = scale;
  y_axis_.min = min;
  y_axis_.max = max;
}

void SvgPlot::set_x_ticks(std::vector<double> values, std::vector<std::string> labels) {
  if (!labels.empty() && labels.size() != values.size())
    throw Error("SvgPlot::set_x_ticks: one label per tick, or none");
  x_axis_.tick_values = std::move(values);
  x_axis_.tick_labels = std::move(labels);
}

void SvgPlot::set_y_ticks(std::vector<double> values, std::vector<std::string> labels) {
  if (!labels.empty() && labels.size() != values.size())
    throw Error("SvgPlot::set_y_ticks: one label per tick, or none");
  y_axis_.tick_values = std::move(values);
  y_axis_.tick_labels = std::move(labels);
}

std::string SvgPlot::next_colour() { return kPalette[palette_index_++ % int(std::size(kPalette))]; }

void SvgPlot::add_line(std::string label, std::vector<double> x, std::vector<double> y,
                       SvgStyle style) {
  if (x.size() != y.size())
    throw Error(fmt::format("SvgPlot::add_line '{}': {} x values but {} y values", label, x.size(),
                            y.size()));
  if (style.color.empty()) style.color = next_colour();
  items_.push_back({Kind::line, std::move(label), std::move(x), std::move(y), {}, style});
}

void SvgPlot::add_points(std::string label, std::vector<double> x, std::vector<double> y,
                         SvgStyle style, std::vector<std::string> point_labels) {
  if (x.size() != y.size() || (!point_labels.empty() && point_labels.size() != x.size()))
    throw Error(fmt::format("SvgPlot::add_points '{}': {} x, {} y and {} labels", label, x.size(),
                            y.size(), point_labels.size()));
  if (style.color.empty()) style.color = next_colour();
  // A point's "width" is its radius; the line default of 2 px is too small to see.
  if (style.width == SvgStyle{}.width) style.width = 4.5;
  items_.push_back(
      {Kind::points, std::move(label), std::move(x), std::move(y), std::move(point_labels), style});
}

void SvgPlot::add_hline(double y, std::string label, SvgStyle style) {
  if (style.color.empty()) style.color = "#555555";
  items_.push_back({Kind::hline, std::move(label), {}, {y}, {}, style});
}

void SvgPlot::add_vline(double x, std::string label, SvgStyle style) {
  if (style.color.empty()) style.color = "#555555";
  items_.push_back({Kind::vline, std::move(label), {x}, {}, {}, style});
}

void SvgPlot::add_segment(double x0, double y0, double x1, double y1, std::string label,
                          SvgStyle style) {
  if (style.color.empty()) style.color = "#555555";
  items_.push_back({Kind::segment, std::move(label), {x0, x1}, {y0, y1}, {}, style});
}

void SvgPlot::add_rect(double x0, double y0, double x1, double y1, std::string text,
                       SvgStyle style) {
  if (style.color.empty()) style.color = next_colour();
  items_.push_back({Kind::rect, std::move(text), {x0, x1}, {y0, y1}, {}, style});
}

void SvgPlot::add_text(double x, double y, std::string text, TextAnchor anchor, std::string color,
                       int font_size) {
  Item item{Kind::text, std::move(text), {x}, {y}, {}, {}};
  item.style.color = std::move(color);
  item.anchor = anchor;
  item.font_size = font_size;
  items_.push_back(std::move(item));
}

void SvgPlot::add_legend_entry(std::string label, SvgStyle style) {
  if (style.color.empty()) style.color = next_colour();
  items_.push_back({Kind::legend_only, std::move(label), {}, {}, {}, style});
}

namespace {

std::string dash(const SvgStyle& s) {
  return s.dashed ? std::string(" stroke-dasharray=\"6,4\"") : std::string();
}

std::string fill(const std::string& colour) { return fmt::format(" fill=\"{}\"", colour); }

// Light grid lines at 2..9 x each decade of a log axis with few decades (none on a linear one).
std::vector<double> minor_ticks(const ResolvedAxis& a) {
  std::vector<double> m;
  if (a.scale != AxisScale::log) return m;
  const double decades = std::log10(a.hi) - std::log10(a.lo);
  if (decades > 7) return m;  // too dense to help
  for (double d = std::pow(10.0, std::floor(std::log10(a.lo))); d < a.hi; d *= 10)
    for (int k = 2; k <= 9; ++k)
      if (d * k > a.lo && d * k < a.hi) m.push_back(d * k);
  return m;
}

}  // namespace

// One rendering of a plot, in the order the picture is built: the axes' ranges and the layout
// (constructor), then the parts. Every text is placed as a box: a label goes to the first of
// its candidate places that is inside the picture and clear of every box placed before it and
// of the marks already drawn (obstacles), so the parts must be rendered in a fixed order:
// frame texts, ticks, legend, data, labels.
class SvgPlot::Renderer {
 public:
  explicit Renderer(const SvgPlot& plot)
      : plot_(plot),
        ax_(resolve_axis(plot.x_axis_, true)),
        ay_(resolve_axis(plot.y_axis_, false)),
        labels_(plot.width_, plot.height_) {
    lay_out();
  }

  std::string header() const;
  std::string grid() const;
  std::string title_and_axis_labels();
  std::string ticks();
  std::string right_scale_label();
  std::string legend();
  std::string data();
  std::string labels();
  std::string frame() const;
  std::vector<TextBox> take_placed() { return labels_.take_placed(); }

 private:
  ResolvedAxis resolve_axis(const Axis& axis, bool horizontal) const;
  void lay_out();
  double X(double v) const { return left_ + ax_.unit(v) * (right_ - left_); }
  double Y(double v) const { return bottom_ - ay_.unit(v) * (bottom_ - top_); }
  void swatch(std::string& out, const Item& e, double x, double cy) const;
  void text_labels(std::string& out);
  void line_labels(std::string& out);
  void point_labels(std::string& out);
  void bar_labels(std::string& out);

  const SvgPlot& plot_;
  ResolvedAxis ax_, ay_;
  // The legend's entries, their widths, and (above the plot) the row of each.
  std::vector<const Item*> entries_;
  std::vector<double> entry_w_;
  std::vector<int> above_row_;
  int above_rows_ = 0;
  bool legend_shown_ = false;
  bool right_scale_ = false;
  double left_ = 0, right_ = 0, top_ = 0, bottom_ = 0;  // the plot area, in pixels
  LabelPlacer labels_;  // the texts placed, and the drawn marks they must not cover
};

// Every value an item places on the axis counts toward its range.
ResolvedAxis SvgPlot::Renderer::resolve_axis(const Axis& axis, bool horizontal) const {
  const char* name = horizontal ? "x" : "y";
  std::vector<double> values;
  for (const Item& it : plot_.items_) {
    if (it.kind == Kind::legend_only) continue;
    if (horizontal && it.kind == Kind::hline) continue;
    if (!horizontal && it.kind == Kind::vline) continue;
    const std::vector<double>& v = horizontal ? it.x : it.y;
    for (double d : v) {
      if (!std::isfinite(d)) continue;  // a missing measurement: not drawn, not fatal
      if (axis.scale == AxisScale::log && d <= 0.0)
        throw Error(fmt::format("SvgPlot '{}': value {} on the log {} axis ('{}')", plot_.title_, d,
                                name, it.label));
      values.push_back(d);
    }
  }
  for (double d : axis.tick_values) values.push_back(d);
  double lo = axis.min, hi = axis.max;
  if (values.empty() && (std::isnan(lo) || std::isnan(hi)))
    throw Error(fmt::format("SvgPlot '{}': nothing determines the {} range", plot_.title_, name));
  const auto [mn, mx] =
      values.empty() ? std::pair<double, double>{lo, hi}
                     : std::pair<double, double>{*std::min_element(values.begin(), values.end()),
                                                 *std::max_element(values.begin(), values.end())};
  const bool auto_lo = std::isnan(lo), auto_hi = std::isnan(hi);
  if (auto_lo) lo = mn;
  if (auto_hi) hi = mx;
  if (axis.scale == AxisScale::log && (lo <= 0.0 || hi <= 0.0))
    throw Error(fmt::format("SvgPlot '{}': the log {} axis needs a range > 0", plot_.title_, name));
  if (!(hi > lo)) {  // one value, or a degenerate fixed range: open it up around the value
    if (axis.scale == AxisScale::log) {
      lo /= 3.0;
      hi *= 3.0;
    } else {
      const double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
  }
  ResolvedAxis r{axis.scale, lo, hi, {}, {}};
  if (axis.tick_values.empty()) {
    // Automatic ranges round out to whole ticks, so the frame starts and ends on a label.
    const std::vector<double> t =
        axis.scale == AxisScale::log ? log_ticks(lo, hi) : linear_ticks(lo, hi);
    if (auto_lo) r.lo = std::min(r.lo, t.front());
    if (auto_hi) r.hi = std::max(r.hi, t.back());
    for (double v : t)
      if (v >= r.lo * (1 - 1e-12) - 1e-300 && v <= r.hi * (1 + 1e-12) + 1e-300) {
        r.ticks.push_back(v);
        r.labels.push_back(format_tick(v));
      }
  } else {
    r.ticks = axis.tick_values;
    for (std::size_t i = 0; i < r.ticks.size(); ++i)
      r.labels.push_back(axis.tick_labels.empty() ? format_tick(r.ticks[i]) : axis.tick_labels[i]);
  }
  return r;
}

// The legend above the plot takes rows under the title; a right scale takes a column.
void SvgPlot::Renderer::lay_out() {
  const SvgPlot& p = plot_;
  for (const Item& it : p.items_)
    if ((it.kind == Kind::line || it.kind == Kind::points || it.kind == Kind::legend_only) &&
        !it.label.empty())
      entries_.push_back(&it);
  legend_shown_ = p.legend_ != LegendPosition::none && !entries_.empty();
  const double entry_w_pad = 38;  // swatch, gap, and a little air after the text
  for (const Item* e : entries_) entry_w_.push_back(entry_w_pad + text_width_px(e->label, 12));
  // Rows of the legend above the plot: entries left to right, wrapped at the picture's width.
  above_row_.assign(entries_.size(), 0);
  if (legend_shown_ && p.legend_ == LegendPosition::above) {
    double x = 0;
    above_rows_ = 1;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (x > 0 && x + entry_w_[i] > p.width_ - kMarginLeft - kMarginRight) x = 0, ++above_rows_;
      above_row_[i] = above_rows_ - 1;
      x += entry_w_[i];
    }
  }
  right_scale_ = !p.right_tick_values_.empty();
  double right_w = 0;
  for (const std::string& l : p.right_tick_labels_)
    right_w = std::max(right_w, text_width_px(l, 12));
  left_ = kMarginLeft;
  right_ = p.width_ - kMarginRight - (right_scale_ ? right_w + 30 : 0.0);
  top_ = kMarginTop + 18.0 * above_rows_;
  bottom_ = p.height_ - kMarginBottom;
  if (right_ - left_ < 40 || bottom_ - top_ < 40)
    throw Error(fmt::format("SvgPlot '{}': no room left for the plot area", p.title_));
}

std::string SvgPlot::Renderer::header() const {
  const int w = plot_.width_, h = plot_.height_;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      w, h, w, h);
  o += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", w, h);
  o += fmt::format(
      "<defs><clipPath id=\"plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
      "</clipPath></defs>\n",
      format_px(left_), format_px(top_), format_px(right_ - left_), format_px(bottom_ - top_));
  return o;
}

// Light lines at the ticks (and at 2..9 x each decade on log axes with few decades).
std::string SvgPlot::Renderer::grid() const {
  std::string o = "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double v : minor_ticks(ax_))
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#f3f3f3\"/>\n",
                     format_px(X(v)), format_px(top_), format_px(bottom_));
  for (double v : minor_ticks(ay_))
    o += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#f3f3f3\"/>\n",
                     format_px(Y(v)), format_px(left_), format_px(right_));
  for (double v : ax_.ticks)
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", format_px(X(v)),
                     format_px(top_), format_px(bottom_));
  for (double v : ay_.ticks)
    o += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/>\n", format_px(Y(v)),
                     format_px(left_), format_px(right_));
  o += "</g>\n";
  return o;
}

// The frame's texts come first, so nothing else takes their place.
std::string SvgPlot::Renderer::title_and_axis_labels() {
  const SvgPlot& p = plot_;
  std::string texts;
  if (!p.title_.empty()) {
    // A long title shrinks to fit the picture rather than running off it.
    const double fs =
        std::min(16.0, (p.width_ - 16.0) / std::max(1.0, text_width_px(p.title_, 1.0)));
    TextSpec s{p.width_ / 2.0, 26, TextAnchor::middle};
    s.font_size = std::floor(fs * 10) / 10;
    labels_.place(texts, {s}, p.title_, " font-weight=\"bold\"", -1, true);
  }
  if (!p.x_axis_.label.empty()) {
    TextSpec s{(left_ + right_) / 2, p.height_ - 16.0, TextAnchor::middle};
    s.font_size = 13;
    labels_.place(texts, {s}, p.x_axis_.label, "", -1, true);
  }
  if (!p.y_axis_.label.empty()) {
    TextSpec s{18, (top_ + bottom_) / 2, TextAnchor::middle};
    s.font_size = 13, s.angle = -90, s.rx = 18, s.ry = (top_ + bottom_) / 2;
    labels_.place(texts, {s}, p.y_axis_.label, "", -1, true);
  }
  return texts;
}

// Tick marks and their labels (a label that would overlap the one before it is skipped), and
// the right scale's.
std::string SvgPlot::Renderer::ticks() {
  std::string out;
  for (std::size_t i = 0; i < ax_.ticks.size(); ++i) {
    const double x = X(ax_.ticks[i]);
    if (x < left_ - 0.5 || x > right_ + 0.5) continue;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333333\"/>\n",
                       format_px(x), format_px(bottom_), format_px(bottom_ + 5));
    TextSpec s{x, bottom_ + 18, TextAnchor::middle};
    labels_.place(out, {s}, ax_.labels[i], fill("#333333"));
  }
  for (std::size_t i = 0; i < ay_.ticks.size(); ++i) {
    const double y = Y(ay_.ticks[i]);
    if (y < top_ - 0.5 || y > bottom_ + 0.5) continue;
    out += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#333333\"/>\n",
                       format_px(y), format_px(left_ - 5), format_px(left_));
    TextSpec s{left_ - 8, y, TextAnchor::end};
    s.central = true;
    labels_.place(out, {s}, ay_.labels[i], fill("#333333"));
  }
  if (!right_scale_) return out;
  for (std::size_t i = 0; i < plot_.right_tick_values_.size(); ++i) {
    const double y = Y(plot_.right_tick_values_[i]);
    if (y < top_ - 0.5 || y > bottom_ + 0.5) continue;
    out += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#d62728\"/>\n",
                       format_px(y), format_px(right_), format_px(right_ + 5));
    TextSpec s{right_ + 8, y, TextAnchor::start};
    s.central = true;
    labels_.place(out, {s}, plot_.right_tick_labels_[i], fill("#d62728"));
  }
  return out;
}

std::string SvgPlot::Renderer::right_scale_label() {
  std::string out;
  if (!right_scale_ || plot_.right_label_.empty()) return out;
  const double rx = plot_.width_ - 14.0, ry = (top_ + bottom_) / 2;
  TextSpec s{rx, ry, TextAnchor::middle};
  s.font_size = 13, s.angle = 90, s.rx = rx, s.ry = ry;
  labels_.place(out, {s}, plot_.right_label_, fill("#d62728"), -1, true);
  return out;
}

// A legend entry's mark: a line, a dot, or a filled box.
void SvgPlot::Renderer::swatch(std::string& out, const Item& e, double x, double cy) const {
  if (e.kind == Kind::line)
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
        format_px(x), format_px(cy), format_px(x + 22), format_px(cy), e.style.color, e.style.width,
        dash(e.style));
  else if (e.kind == Kind::points)
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{}\"/>\n", format_px(x + 11),
                       format_px(cy), e.style.color);
  else
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{}\" fill-opacity=\"{}\"/>\n",
        format_px(x), format_px(cy - 5), e.style.color, e.style.opacity);
}

// A frame in a corner of the plot area, or rows above it.
std::string SvgPlot::Renderer::legend() {
  std::string out;
  if (!legend_shown_) return out;
  const LegendPosition where = plot_.legend_;
  out += "<g>";
  if (where == LegendPosition::above) {
    std::vector<double> row_x(above_rows_, left_);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const double cy = kMarginTop - 6 + 18.0 * above_row_[i];
      double& x = row_x[above_row_[i]];
      swatch(out, *entries_[i], x, cy);
      TextSpec s{x + 28, cy, TextAnchor::start};
      s.central = true;
      labels_.place(out, {s}, entries_[i]->label, "", -1, true);
      x += entry_w_[i];
    }
  } else {
    double longest = 0;
    for (double w : entry_w_) longest = std::max(longest, w);
    const double w = longest, h = 8 + 18.0 * double(entries_.size());
    const bool at_right =
        where == LegendPosition::top_right || where == LegendPosition::bottom_right;
    const bool at_bottom =
        where == LegendPosition::bottom_left || where == LegendPosition::bottom_right;
    const double bx = at_right ? right_ - 10 - w : left_ + 10;
    const double by = at_bottom ? bottom_ - 10 - h : top_ + 10;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"white\" fill-opacity=\"0.9\" "
        "stroke=\"#bbbbbb\"/>\n",
        format_px(bx), format_px(by), format_px(w), format_px(h));
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const double cy = by + 4 + 18.0 * double(i) + 9;
      swatch(out, *entries_[i], bx + 6, cy);
      TextSpec s{bx + 34, cy, TextAnchor::start};
      s.central = true;
      labels_.place(out, {s}, entries_[i]->label, "", -1, true);
    }
    // The frame is an obstacle: no label of the data goes under it.
    labels_.add_obstacle({"", bx + w / 2, by + h / 2, w / 2, h / 2, 0});
  }
  out += "</g>\n";
  return out;
}

// The items, clipped to the plot area; marks that labels must avoid become obstacles.
std::string SvgPlot::Renderer::data() {
  std::string o = "<g clip-path=\"url(#plot-area)\">\n";
  for (std::size_t k = 0; k < plot_.items_.size(); ++k) {
    const Item& it = plot_.items_[k];
    const SvgStyle& s = it.style;
    switch (it.kind) {
      case Kind::rect: {
        const double x0 = X(std::min(it.x[0], it.x[1])), x1 = X(std::max(it.x[0], it.x[1]));
        const double y0 = Y(std::max(it.y[0], it.y[1])), y1 = Y(std::min(it.y[0], it.y[1]));
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{}\" "
            "stroke=\"{}\" stroke-width=\"1\"{}/>\n",
            format_px(x0), format_px(y0), format_px(x1 - x0), format_px(y1 - y0), s.color,
            s.opacity, s.color, dash(s));
        break;
      }
      case Kind::line: {
        std::string points;
        for (std::size_t i = 0; i < it.x.size(); ++i) {
          if (!std::isfinite(it.x[i]) || !std::isfinite(it.y[i])) continue;
          points += fmt::format("{},{} ", format_px(X(it.x[i])), format_px(Y(it.y[i])));
        }
        o += fmt::format(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
            "stroke-opacity=\"{}\" stroke-linejoin=\"round\"{}/>\n",
            points, s.color, s.width, s.opacity, dash(s));
        break;
      }
      case Kind::hline:
      case Kind::vline:
      case Kind::segment: {
        double x0, y0, x1, y1;
        if (it.kind == Kind::hline) {
          x0 = left_, x1 = right_, y0 = y1 = Y(it.y[0]);
        } else if (it.kind == Kind::vline) {
          y0 = top_, y1 = bottom_, x0 = x1 = X(it.x[0]);
        } else {
          x0 = X(it.x[0]), y0 = Y(it.y[0]), x1 = X(it.x[1]), y1 = Y(it.y[1]);
        }
        o += fmt::format(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\" "
            "stroke-opacity=\"{}\"{}/>\n",
            format_px(x0), format_px(y0), format_px(x1), format_px(y1), s.color, s.width, s.opacity,
            dash(s));
        if (it.kind == Kind::segment) {
          // The visible part only: a roof running off the frame is no obstacle out there.
          const double cx0 = std::clamp(x0, left_, right_), cx1 = std::clamp(x1, left_, right_);
          const double t0 = x1 != x0 ? (cx0 - x0) / (x1 - x0) : 0.0,
                       t1 = x1 != x0 ? (cx1 - x0) / (x1 - x0) : 1.0;
          labels_.add_segment_obstacle(x0 + t0 * (x1 - x0), y0 + t0 * (y1 - y0),
                                       x0 + t1 * (x1 - x0), y0 + t1 * (y1 - y0), int(k),
                                       s.width / 2 + 1);
        } else if (it.kind == Kind::hline) {
          labels_.add_segment_obstacle(x0, y0, x1, y1, int(k), s.width / 2 + 1);
        }
        break;
      }
      case Kind::points: {
        for (std::size_t i = 0; i < it.x.size(); ++i) {
          if (!std::isfinite(it.x[i]) || !std::isfinite(it.y[i])) continue;
          const double cx = X(it.x[i]), cy = Y(it.y[i]);
          o += fmt::format(
              "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"{}\" "
              "stroke=\"white\" stroke-width=\"1\"/>\n",
              format_px(cx), format_px(cy), s.width, s.color, s.opacity);
          if (cx >= left_ && cx <= right_ && cy >= top_ && cy <= bottom_) {
            // No label may cover a point, not even its own.
            labels_.add_obstacle({"", cx, cy, s.width + 1, s.width + 1, 0});
          }
        }
        break;
      }
      case Kind::text:
      case Kind::legend_only:
        break;
    }
  }
  o += "</g>\n";
  return o;
}

// Free texts: where asked, or nudged up or down a little when something is already there.
void SvgPlot::Renderer::text_labels(std::string& out) {
  for (std::size_t k = 0; k < plot_.items_.size(); ++k) {
    const Item& it = plot_.items_[k];
    if (it.kind != Kind::text || it.label.empty()) continue;
    TextSpec s{X(it.x[0]), Y(it.y[0]), it.anchor};
    s.font_size = it.font_size;
    std::vector<TextSpec> c{s};
    for (double dy : {-8.0, 8.0, -16.0, 16.0}) c.push_back(s), c.back().y += dy;
    labels_.place(out, c, it.label, fill(it.style.color), int(k), true);
  }
}

// Labels of reference lines: horizontal, vertical (turned to run along the line) and segments
// (along the segment).
void SvgPlot::Renderer::line_labels(std::string& out) {
  for (std::size_t k = 0; k < plot_.items_.size(); ++k) {
    const Item& it = plot_.items_[k];
    if (it.label.empty()) continue;
    const std::string attrs = fill(it.style.color);
    if (it.kind == Kind::hline) {
      const double y = Y(it.y[0]);
      std::vector<TextSpec> c{{right_ - 4, y - 5, TextAnchor::end},
                              {right_ - 4, y + 14, TextAnchor::end},
                              {left_ + 4, y - 5, TextAnchor::start},
                              {left_ + 4, y + 14, TextAnchor::start}};
      labels_.place(out, c, it.label, attrs, int(k));
    } else if (it.kind == Kind::vline) {
      const double x = X(it.x[0]);
      // Left of the line at the top, right of it, then at the bottom.
      std::vector<TextSpec> c;
      for (double dx : {-5.0, 14.0})
        for (bool at_top : {true, false}) {
          TextSpec s{x + dx, at_top ? top_ + 4 : bottom_ - 4,
                     at_top ? TextAnchor::end : TextAnchor::start};
          s.angle = -90, s.rx = s.x, s.ry = s.y;
          c.push_back(s);
        }
      labels_.place(out, c, it.label, attrs, int(k));
    } else if (it.kind == Kind::segment) {
      const double x0 = X(it.x[0]), y0 = Y(it.y[0]), x1 = X(it.x[1]), y1 = Y(it.y[1]);
      const double cx0 = std::clamp(x0, left_, right_), cx1 = std::clamp(x1, left_, right_);
      const double t0 = x1 != x0 ? (cx0 - x0) / (x1 - x0) : 0.0;
      const double t1 = x1 != x0 ? (cx1 - x0) / (x1 - x0) : 1.0;
      const double angle = std::atan2(y1 - y0, x1 - x0) * 180.0 / std::numbers::pi;
      const double a = angle * std::numbers::pi / 180;
      // Above the segment (then below), at the middle of its visible part first.
      std::vector<TextSpec> c;
      for (double f : {0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9})
        for (double off : {-6.0, 14.0, -18.0, 26.0}) {
          const double t = t0 + f * (t1 - t0);
          const double mx = x0 + t * (x1 - x0), my = y0 + t * (y1 - y0);
          // The offset is perpendicular to the segment (in the text's own "up" direction).
          TextSpec s{mx - std::sin(a) * off, my + std::cos(a) * off, TextAnchor::middle};
          s.angle = angle, s.rx = s.x, s.ry = s.y;
          c.push_back(s);
        }
      labels_.place(out, c, it.label, attrs, int(k));
    }
  }
}

// Each labelled point: right above, right below, left above, left below, centred above,
// centred below, whichever is free first.
void SvgPlot::Renderer::point_labels(std::string& out) {
  for (const Item& it : plot_.items_) {
    if (it.kind != Kind::points || it.texts.empty()) continue;
    const double r = it.style.width;
    for (std::size_t i = 0; i < it.x.size(); ++i) {
      if (!std::isfinite(it.x[i]) || !std::isfinite(it.y[i]) || it.texts[i].empty()) continue;
      const double cx = X(it.x[i]), cy = Y(it.y[i]);
      TextSpec base{0, 0, TextAnchor::start};
      base.font_size = 11;
      std::vector<TextSpec> c;
      for (auto [dx, dy, an] : {std::tuple{r + 3, -r - 2, TextAnchor::start},
                                {r + 3, r + 11, TextAnchor::start},
                                {-r - 3, -r - 2, TextAnchor::end},
                                {-r - 3, r + 11, TextAnchor::end},
                                {0.0, -r - 4, TextAnchor::middle},
                                {0.0, r + 13, TextAnchor::middle}}) {
        TextSpec s = base;
        s.x = cx + dx, s.y = cy + dy, s.anchor = an;
        c.push_back(s);
      }
      labels_.place(out, c, it.texts[i], fill(it.style.color));
    }
  }
}

// A bar's label goes only inside its bar, and only when it fits there: a narrow bar keeps its
// colour alone. A thin bar gets a smaller font, down to 8 px.
void SvgPlot::Renderer::bar_labels(std::string& out) {
  for (const Item& it : plot_.items_) {
    if (it.kind != Kind::rect || it.label.empty()) continue;
    const double x0 = X(std::min(it.x[0], it.x[1])), x1 = X(std::max(it.x[0], it.x[1]));
    const double y0 = Y(std::max(it.y[0], it.y[1])), y1 = Y(std::min(it.y[0], it.y[1]));
    const double fs = std::min(11.0, std::floor((y1 - y0 + 1) / 1.1));
    if (fs < 8 || text_width_px(it.label, fs) > x1 - x0 - 2) continue;
    if (x0 < left_ || x1 > right_ || y0 < top_ - 0.5 || y1 > bottom_ + 0.5) continue;
    TextSpec s{(x0 + x1) / 2, (y0 + y1) / 2, TextAnchor::middle};
    s.central = true, s.font_size = fs;
    labels_.place(out, {s}, it.label, " fill=\"#111111\"");
  }
}

// Labels, most important first: free texts, reference lines, points, then bars.
std::string SvgPlot::Renderer::labels() {
  std::string out;
  text_labels(out);
  line_labels(out);
  point_labels(out);
  bar_labels(out);
  return out;
}

std::string SvgPlot::Renderer::frame() const {
  return fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n",
      format_px(left_), format_px(top_), format_px(right_ - left_), format_px(bottom_ - top_));
}

std::string SvgPlot::render_impl(std::vector<TextBox>* boxes) const {
  Renderer r(*this);
  // Placed in this order (each text avoids those before it): the frame's texts, the ticks, the
  // legend, then the data's marks and their labels.
  std::string texts = r.title_and_axis_labels();
  const std::string ticks = r.ticks();
  texts += r.right_scale_label();
  const std::string legend = r.legend();
  // Drawn in this order (later on top): grid, data, labels, frame, ticks, frame texts, legend.
  std::string o = r.header();
  o += r.grid();
  o += r.data();
  o += r.labels();
  o += r.frame();
  o += ticks;
  o += texts;
  o += legend;
  o += "</svg>\n";
  if (boxes) *boxes = r.take_placed();
  return o;
}

std::string SvgPlot::render() const { return render_impl(nullptr); }

std::vector<TextBox> SvgPlot::text_boxes() const {
  std::vector<TextBox> boxes;
  render_impl(&boxes);
  return boxes;
}

void SvgPlot::set_right_ticks(std::vector<double> values, std::vector<std::string> labels,
                              std::string label) {
  if (labels.size() != values.size()) throw Error("SvgPlot::set_right_ticks: one label per tick");
  right_tick_values_ = std::move(values);
  right_tick_labels_ = std::move(labels);
  right_label_ = std::move(label);
}

void SvgPlot::save(const std::string& path) const {
  write_file_atomically(path, render(), "--plot");
}

std::string title_model_name(const std::string& model_name) {
  if (model_name.rfind("synthetic:", 0) == 0) return model_name;  // its parentheses may hold a /
  const std::size_t slash = model_name.find_last_of('/');
  return slash == std::string::npos ? model_name : model_name.substr(slash + 1);
}

}  // namespace inferlab
