// The SVG plot writer: collects items in data coordinates, fixes the axis ranges at render time,
// maps every item onto the picture and clips it to the plot area.
#include "inferlab/svg.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <utility>

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/safe_files.hpp"

namespace inferlab {

namespace {

// Tableau's 10 colours: distinguishable, and the default of most plotting libraries.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Picture margins around the plot area, in pixels: room for tick labels, axis labels, title.
constexpr double kMarginLeft = 78, kMarginRight = 28, kMarginTop = 44, kMarginBottom = 58;

const char* anchor_name(TextAnchor a) {
  switch (a) {
    case TextAnchor::middle: return "middle";
    case TextAnchor::end: return "end";
    default: return "start";
  }
}

// Pixel coordinates are written with two decimals: sub-pixel precision, short files.
std::string px(double v) { return fmt::format("{:.2f}", v); }

// One axis with its range resolved: maps data values to [0, 1] along the axis.
struct ResolvedAxis {
  AxisScale scale;
  double lo, hi;
  std::vector<double> ticks;
  std::vector<std::string> labels;
  double unit(double v) const {
    if (scale == AxisScale::log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
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
  if (ticks.back() < hi) ticks.push_back(std::pow(10.0, e0 + ((decades + stride - 1) / stride) * stride));
  return ticks;
}

std::string format_tick(double value) {
  if (value == 0.0) return "0";
  const double a = std::abs(value);
  if (a >= 1e-3 && a < 1e5) return fmt::format("{:g}", value);
  return fmt::format("{:.0e}", value);  // "1e+06": short, unambiguous
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

SvgPlot::SvgPlot(std::string title, int width, int height)
    : title_(std::move(title)), width_(width), height_(height) {
  if (width < 200 || height < 150) throw Error("SvgPlot: the picture must be at least 200 x 150 px");
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

std::string SvgPlot::next_colour() {
  return kPalette[palette_index_++ % int(std::size(kPalette))];
}

void SvgPlot::add_line(std::string label, std::vector<double> x, std::vector<double> y,
                       SvgStyle style) {
  if (x.size() != y.size())
    throw Error(fmt::format("SvgPlot::add_line '{}': {} x values but {} y values", label,
                            x.size(), y.size()));
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
  items_.push_back({Kind::points, std::move(label), std::move(x), std::move(y),
                    std::move(point_labels), style});
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

void SvgPlot::add_text(double x, double y, std::string text, TextAnchor anchor,
                       std::string color, int font_size) {
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

std::string SvgPlot::render() const {
  // --- resolve the ranges: every value an item places on an axis counts ---
  auto resolve = [&](const Axis& axis, bool horizontal) {
    const char* name = horizontal ? "x" : "y";
    std::vector<double> values;
    for (const Item& it : items_) {
      if (it.kind == Kind::legend_only) continue;
      if (horizontal && it.kind == Kind::hline) continue;
      if (!horizontal && it.kind == Kind::vline) continue;
      const std::vector<double>& v = horizontal ? it.x : it.y;
      for (double d : v) {
        if (!std::isfinite(d)) continue;  // a missing measurement: not drawn, not fatal
        if (axis.scale == AxisScale::log && d <= 0.0)
          throw Error(fmt::format("SvgPlot '{}': value {} on the log {} axis ('{}')", title_, d,
                                  name, it.label));
        values.push_back(d);
      }
    }
    for (double d : axis.tick_values) values.push_back(d);
    double lo = axis.min, hi = axis.max;
    if (values.empty() && (std::isnan(lo) || std::isnan(hi)))
      throw Error(fmt::format("SvgPlot '{}': nothing determines the {} range", title_, name));
    const auto [mn, mx] = values.empty() ? std::pair<double, double>{lo, hi}
                                         : std::pair<double, double>{
                                               *std::min_element(values.begin(), values.end()),
                                               *std::max_element(values.begin(), values.end())};
    const bool auto_lo = std::isnan(lo), auto_hi = std::isnan(hi);
    if (auto_lo) lo = mn;
    if (auto_hi) hi = mx;
    if (axis.scale == AxisScale::log && (lo <= 0.0 || hi <= 0.0))
      throw Error(fmt::format("SvgPlot '{}': the log {} axis needs a range > 0", title_, name));
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
  };
  const ResolvedAxis ax = resolve(x_axis_, true);
  const ResolvedAxis ay = resolve(y_axis_, false);

  const double left = kMarginLeft, right = width_ - kMarginRight;
  const double top = kMarginTop, bottom = height_ - kMarginBottom;
  auto X = [&](double v) { return left + ax.unit(v) * (right - left); };
  auto Y = [&](double v) { return bottom - ay.unit(v) * (bottom - top); };
  auto dash = [](const SvgStyle& s) {
    return s.dashed ? std::string(" stroke-dasharray=\"6,4\"") : std::string();
  };

  std::string o;
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      width_, height_, width_, height_);
  o += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", width_, height_);
  o += fmt::format(
      "<defs><clipPath id=\"plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
      "</clipPath></defs>\n",
      px(left), px(top), px(right - left), px(bottom - top));

  // --- grid: light lines at the ticks (and at 2..9 x each decade on log axes with few decades) ---
  o += "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  auto minor = [](const ResolvedAxis& a) {
    std::vector<double> m;
    if (a.scale != AxisScale::log) return m;
    const double decades = std::log10(a.hi) - std::log10(a.lo);
    if (decades > 7) return m;  // too dense to help
    for (double d = std::pow(10.0, std::floor(std::log10(a.lo))); d < a.hi; d *= 10)
      for (int k = 2; k <= 9; ++k)
        if (d * k > a.lo && d * k < a.hi) m.push_back(d * k);
    return m;
  };
  for (double v : minor(ax))
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#f3f3f3\"/>\n",
                     px(X(v)), px(top), px(bottom));
  for (double v : minor(ay))
    o += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#f3f3f3\"/>\n",
                     px(Y(v)), px(left), px(right));
  for (double v : ax.ticks)
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", px(X(v)), px(top),
                     px(bottom));
  for (double v : ay.ticks)
    o += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/>\n", px(Y(v)), px(left),
                     px(right));
  o += "</g>\n";

  // --- data, clipped to the plot area; labels of points and lines are drawn after, unclipped
  //     but kept inside the picture ---
  std::string labels;
  o += "<g clip-path=\"url(#plot-area)\">\n";
  for (const Item& it : items_) {
    const SvgStyle& s = it.style;
    switch (it.kind) {
      case Kind::rect: {
        const double x0 = X(std::min(it.x[0], it.x[1])), x1 = X(std::max(it.x[0], it.x[1]));
        const double y0 = Y(std::max(it.y[0], it.y[1])), y1 = Y(std::min(it.y[0], it.y[1]));
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{}\" "
            "stroke=\"{}\" stroke-width=\"1\"{}/>\n",
            px(x0), px(y0), px(x1 - x0), px(y1 - y0), s.color, s.opacity, s.color, dash(s));
        if (!it.label.empty())
          o += fmt::format(
              "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" dominant-baseline=\"central\" "
              "font-size=\"11\" fill=\"#111111\">{}</text>\n",
              px((x0 + x1) / 2), px((y0 + y1) / 2), xml_escape(it.label));
        break;
      }
      case Kind::line: {
        std::string points;
        for (std::size_t i = 0; i < it.x.size(); ++i) {
          if (!std::isfinite(it.x[i]) || !std::isfinite(it.y[i])) continue;
          points += fmt::format("{},{} ", px(X(it.x[i])), px(Y(it.y[i])));
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
          x0 = left, x1 = right, y0 = y1 = Y(it.y[0]);
        } else if (it.kind == Kind::vline) {
          y0 = top, y1 = bottom, x0 = x1 = X(it.x[0]);
        } else {
          x0 = X(it.x[0]), y0 = Y(it.y[0]), x1 = X(it.x[1]), y1 = Y(it.y[1]);
        }
        o += fmt::format(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\" "
            "stroke-opacity=\"{}\"{}/>\n",
            px(x0), px(y0), px(x1), px(y1), s.color, s.width, s.opacity, dash(s));
        if (it.label.empty()) break;
        if (it.kind == Kind::hline) {
          labels += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\">{}</text>\n",
                                px(right - 4), px(y0 - 5), s.color, xml_escape(it.label));
        } else if (it.kind == Kind::vline) {
          labels += fmt::format(
              "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" fill=\"{2}\" "
              "transform=\"rotate(-90 {0} {1})\">{3}</text>\n",
              px(x0 - 5), px(top + 4), s.color, xml_escape(it.label));
        } else {
          // Along the segment, above it, at the middle of its visible part.
          const double cx0 = std::clamp(x0, left, right), cx1 = std::clamp(x1, left, right);
          const double t0 = x1 != x0 ? (cx0 - x0) / (x1 - x0) : 0.0;
          const double t1 = x1 != x0 ? (cx1 - x0) / (x1 - x0) : 1.0;
          const double tm = (t0 + t1) / 2;
          const double mx = x0 + tm * (x1 - x0), my = y0 + tm * (y1 - y0);
          const double angle = std::atan2(y1 - y0, x1 - x0) * 180.0 / std::numbers::pi;
          labels += fmt::format(
              "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" fill=\"{2}\" "
              "transform=\"rotate({3:.2f} {0} {4})\">{5}</text>\n",
              px(mx), px(my - 6), s.color, angle, px(my), xml_escape(it.label));
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
              px(cx), px(cy), s.width, s.color, s.opacity);
          if (!it.texts.empty() && !it.texts[i].empty()) {
            // Right of the point, unless that runs off the plot: then left of it.
            const bool flip = cx > right - 90;
            labels += fmt::format(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"11\" fill=\"{}\">{}</text>\n",
                px(flip ? cx - s.width - 3 : cx + s.width + 3), px(cy - s.width - 2),
                flip ? "end" : "start", s.color, xml_escape(it.texts[i]));
          }
        }
        break;
      }
      case Kind::text:
        labels += fmt::format(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"{}\">{}</text>\n",
            px(X(it.x[0])), px(Y(it.y[0])), anchor_name(it.anchor), it.font_size, it.style.color,
            xml_escape(it.label));
        break;
      case Kind::legend_only: break;
    }
  }
  o += "</g>\n";
  o += labels;

  // --- frame, ticks, axis labels, title ---
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n",
      px(left), px(top), px(right - left), px(bottom - top));
  for (std::size_t i = 0; i < ax.ticks.size(); ++i) {
    const double x = X(ax.ticks[i]);
    if (x < left - 0.5 || x > right + 0.5) continue;
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333333\"/>\n",
                     px(x), px(bottom), px(bottom + 5));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n",
                     px(x), px(bottom + 18), xml_escape(ax.labels[i]));
  }
  for (std::size_t i = 0; i < ay.ticks.size(); ++i) {
    const double y = Y(ay.ticks[i]);
    if (y < top - 0.5 || y > bottom + 0.5) continue;
    o += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#333333\"/>\n",
                     px(y), px(left - 5), px(left));
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"central\" "
        "fill=\"#333333\">{}</text>\n",
        px(left - 8), px(y), xml_escape(ay.labels[i]));
  }
  if (!x_axis_.label.empty())
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                     px((left + right) / 2), px(height_ - 16.0), xml_escape(x_axis_.label));
  if (!y_axis_.label.empty())
    o += fmt::format(
        "<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" font-size=\"13\" "
        "transform=\"rotate(-90 18 {0})\">{1}</text>\n",
        px((top + bottom) / 2), xml_escape(y_axis_.label));
  if (!title_.empty())
    o += fmt::format(
        "<text x=\"{}\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{}"
        "</text>\n",
        px(width_ / 2.0), xml_escape(title_));

  // --- legend: one row per line, point series and legend-only entry ---
  std::vector<const Item*> entries;
  for (const Item& it : items_)
    if ((it.kind == Kind::line || it.kind == Kind::points || it.kind == Kind::legend_only) &&
        !it.label.empty())
      entries.push_back(&it);
  if (legend_ != LegendPosition::none && !entries.empty()) {
    std::size_t longest = 0;
    for (const Item* e : entries) longest = std::max(longest, e->label.size());
    // No font metrics without a renderer: about 6.6 px per character at 12 px is close enough.
    const double w = 38 + 6.6 * double(longest), h = 8 + 18.0 * double(entries.size());
    const bool at_right = legend_ == LegendPosition::top_right || legend_ == LegendPosition::bottom_right;
    const bool at_bottom = legend_ == LegendPosition::bottom_left || legend_ == LegendPosition::bottom_right;
    const double bx = at_right ? right - 10 - w : left + 10;
    const double by = at_bottom ? bottom - 10 - h : top + 10;
    o += fmt::format(
        "<g><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"white\" fill-opacity=\"0.9\" "
        "stroke=\"#bbbbbb\"/>\n",
        px(bx), px(by), px(w), px(h));
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Item& e = *entries[i];
      const double cy = by + 4 + 18.0 * double(i) + 9;
      if (e.kind == Kind::line)
        o += fmt::format(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
            px(bx + 6), px(cy), px(bx + 28), px(cy), e.style.color, e.style.width, dash(e.style));
      else if (e.kind == Kind::points)
        o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{}\"/>\n", px(bx + 17),
                         px(cy), e.style.color);
      else
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{}\" fill-opacity=\"{}\"/>\n",
            px(bx + 6), px(cy - 5), e.style.color, e.style.opacity);
      o += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"central\">{}</text>\n",
                       px(bx + 34), px(cy), xml_escape(e.label));
    }
    o += "</g>\n";
  }
  o += "</svg>\n";
  return o;
}

void SvgPlot::save(const std::string& path) const {
  write_file_atomically(path, render(), "plot file");
}

}  // namespace inferlab
