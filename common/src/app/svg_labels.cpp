// The texts of a plot: their estimated boxes, their <text> elements, and the placer that puts
// each at its first free candidate place.
#include "inferlab/app/svg_labels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <utility>

#include <fmt/format.h>

namespace inferlab {

namespace {

const char* anchor_name(TextAnchor a) {
  switch (a) {
    case TextAnchor::middle:
      return "middle";
    case TextAnchor::end:
      return "end";
    default:
      return "start";
  }
}

}  // namespace

double text_width_px(const std::string& text, double font_size) {
  std::size_t chars = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++chars;  // count UTF-8 lead bytes only
  return 0.62 * font_size * double(chars);
}

TextBox text_box(const TextSpec& s, const std::string& text) {
  const double w = text_width_px(text, s.font_size);
  const double x0 = s.anchor == TextAnchor::start    ? s.x
                    : s.anchor == TextAnchor::middle ? s.x - w / 2
                                                     : s.x - w;
  const double y0 = s.central ? s.y - 0.55 * s.font_size : s.y - 0.8 * s.font_size;
  const double y1 = s.central ? s.y + 0.55 * s.font_size : s.y + 0.25 * s.font_size;
  TextBox b{text, x0 + w / 2, (y0 + y1) / 2, w / 2, (y1 - y0) / 2, s.angle};
  if (s.angle != 0) {
    const double a = s.angle * std::numbers::pi / 180, dx = b.cx - s.rx, dy = b.cy - s.ry;
    b.cx = s.rx + std::cos(a) * dx - std::sin(a) * dy;
    b.cy = s.ry + std::sin(a) * dx + std::cos(a) * dy;
  }
  return b;
}

bool boxes_overlap(const TextBox& a, const TextBox& b) {
  // Separating axes: the two edge directions of each rectangle.
  auto corners = [](const TextBox& t) {
    const double r = t.angle * std::numbers::pi / 180, c = std::cos(r), s = std::sin(r);
    std::array<std::pair<double, double>, 4> p;
    const double sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
    for (int i = 0; i < 4; ++i) {
      const double dx = sx[i] * t.half_w, dy = sy[i] * t.half_h;
      p[i] = {t.cx + c * dx - s * dy, t.cy + s * dx + c * dy};
    }
    return p;
  };
  const auto pa = corners(a), pb = corners(b);
  for (const TextBox* t : {&a, &b}) {
    const double r = t->angle * std::numbers::pi / 180;
    for (auto [ux, uy] :
         {std::pair{std::cos(r), std::sin(r)}, std::pair{-std::sin(r), std::cos(r)}}) {
      double amin = 1e300, amax = -1e300, bmin = 1e300, bmax = -1e300;
      for (auto [x, y] : pa)
        amin = std::min(amin, x * ux + y * uy), amax = std::max(amax, x * ux + y * uy);
      for (auto [x, y] : pb)
        bmin = std::min(bmin, x * ux + y * uy), bmax = std::max(bmax, x * ux + y * uy);
      if (amax <= bmin + 1e-9 || bmax <= amin + 1e-9) return false;
    }
  }
  return true;
}

bool box_inside(const TextBox& b, double width, double height, double slack) {
  const double a = b.angle * std::numbers::pi / 180;
  const double ex = std::abs(std::cos(a)) * b.half_w + std::abs(std::sin(a)) * b.half_h;
  const double ey = std::abs(std::sin(a)) * b.half_w + std::abs(std::cos(a)) * b.half_h;
  return b.cx - ex >= -slack && b.cx + ex <= width + slack && b.cy - ey >= -slack &&
         b.cy + ey <= height + slack;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_px(double v) { return fmt::format("{:.2f}", v); }

std::string text_element(const TextSpec& s, const std::string& text, const std::string& attrs) {
  std::string out =
      fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}", format_px(s.x), format_px(s.y),
                  anchor_name(s.anchor), s.central ? " dominant-baseline=\"central\"" : "");
  if (s.font_size != 12) out += fmt::format(" font-size=\"{}\"", s.font_size);
  if (s.angle != 0)
    out += fmt::format(" transform=\"rotate({:.2f} {} {})\"", s.angle, format_px(s.rx),
                       format_px(s.ry));
  out += fmt::format("{}>{}</text>\n", attrs, xml_escape(text));
  return out;
}

bool LabelPlacer::is_free(const TextBox& b, int owner) const {
  if (!box_inside(b, width_, height_)) return false;
  for (const TextBox& p : placed_)
    if (boxes_overlap(b, p)) return false;
  for (std::size_t i = 0; i < obstacles_.size(); ++i)
    if (obstacle_owner_[i] != owner && boxes_overlap(b, obstacles_[i])) return false;
  return true;
}

bool LabelPlacer::place(std::string& out, const std::vector<TextSpec>& candidates,
                        const std::string& text, const std::string& attrs, int owner, bool force) {
  for (const TextSpec& s : candidates) {
    const TextBox b = text_box(s, text);
    if (is_free(b, owner)) {
      placed_.push_back(b);
      out += text_element(s, text, attrs);
      return true;
    }
  }
  if (force && !candidates.empty()) {
    placed_.push_back(text_box(candidates.front(), text));
    out += text_element(candidates.front(), text, attrs);
    return true;
  }
  return false;
}

void LabelPlacer::add_obstacle(const TextBox& box, int owner) {
  obstacles_.push_back(box);
  obstacle_owner_.push_back(owner);
}

void LabelPlacer::add_segment_obstacle(double x0, double y0, double x1, double y1, int owner,
                                       double half_width) {
  const double len = std::hypot(x1 - x0, y1 - y0);
  if (len < 1e-9) return;
  add_obstacle({"", (x0 + x1) / 2, (y0 + y1) / 2, len / 2, half_width,
                std::atan2(y1 - y0, x1 - x0) * 180.0 / std::numbers::pi},
               owner);
}

}  // namespace inferlab
