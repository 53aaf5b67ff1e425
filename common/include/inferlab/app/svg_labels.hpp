#pragma once
/// @file svg_labels.hpp
/// @brief The texts of a plot and where they go: the box a text occupies, the &lt;text&gt;
/// element that draws it, and the placer that puts each label at its first free candidate
/// place (inside the picture, clear of the texts placed before it and of the marks drawn).
///
/// A plot has no font metrics without a renderer, so a text's width is an estimate from its
/// font size and number of characters (text_width_px()); the same estimate serves the plot
/// writer (svg.hpp) and the read-back of a saved picture (svg_read.hpp).

#include <string>
#include <utility>
#include <vector>

namespace inferlab {

/// @brief Text alignment relative to its anchor point.
enum class TextAnchor { start, middle, end };

/// @brief The box one text of a rendered plot occupies, in pixels: a rectangle of half-sizes
/// @p half_w x @p half_h centred at (@p cx, @p cy), turned by @p angle degrees (clockwise, as
/// SVG rotates). The width is estimated from the font size and the number of characters
/// (text_width_px()): a plot has no font metrics without a renderer.
struct TextBox {
  std::string text;   ///< the text as drawn (unescaped)
  double cx = 0;      ///< centre, pixels from the left edge of the picture
  double cy = 0;      ///< centre, pixels from the top edge of the picture
  double half_w = 0;  ///< half the width, along the text
  double half_h = 0;  ///< half the height
  double angle = 0;   ///< rotation about the centre, degrees, clockwise
};

/// @brief Where a text goes, as its &lt;text&gt; element says it: the anchor point, the
/// alignment, the baseline, the rotation and the font size.
struct TextSpec {
  double x = 0;                           ///< SVG anchor point, pixels from the left
  double y = 0;                           ///< SVG anchor point (the baseline), pixels from the top
  TextAnchor anchor = TextAnchor::start;  ///< alignment along the text
  bool central = false;                   ///< dominant-baseline central (else alphabetic)
  double angle = 0;                       ///< rotate(angle rx ry), degrees, clockwise
  double rx = 0;                          ///< centre of the rotation, pixels from the left
  double ry = 0;                          ///< centre of the rotation, pixels from the top
  double font_size = 12;                  ///< pixels
};

/// @brief An upper estimate of the width of @p text at @p font_size px in the plots' sans-serif
/// font: 0.62 em per character (DejaVu Sans averages about 0.55 em), UTF-8 sequences counted as
/// one character. @return pixels
double text_width_px(const std::string& text, double font_size);

/// @brief The box @p text occupies when drawn at @p spec: its estimated width, 0.8 em of ascent
/// above the baseline and 0.25 em of descent below (0.55 em either side for a central
/// baseline), turned about (rx, ry).
TextBox text_box(const TextSpec& spec, const std::string& text);

/// @brief Whether two text boxes overlap (separating-axis test on the two turned rectangles;
/// touching edges do not count). @return true if they share any area
bool boxes_overlap(const TextBox& a, const TextBox& b);

/// @brief Whether @p box lies inside a @p width x @p height picture, allowing it to run
/// @p slack pixels past each edge (a read-back box is rounded to 0.01 px).
bool box_inside(const TextBox& box, double width, double height, double slack = 0);

/// @brief Escapes &, <, >, " and ' for use in SVG text and attributes.
std::string xml_escape(const std::string& text);

/// @brief A pixel coordinate as the plots write it: two decimals (sub-pixel precision, short
/// files).
std::string format_px(double value);

/// @brief The &lt;text&gt; element drawing @p text at @p spec, with extra attributes @p attrs
/// (e.g. ` fill="#333333"`), ending in a newline.
std::string text_element(const TextSpec& spec, const std::string& text, const std::string& attrs);

/// @brief Puts the labels of one picture where they can be read: each goes to the first of its
/// candidate places that is inside the picture and clear of every text placed before it and of
/// the obstacles (drawn marks: a legend frame, a roof line, a point). Texts placed first win,
/// so a plot places them most important first.
class LabelPlacer {
 public:
  /// @param width, height  size of the picture in pixels
  LabelPlacer(double width, double height) : width_(width), height_(height) {}

  /// @brief Appends to @p out the &lt;text&gt; element of @p text at the first free candidate.
  /// @param out  the SVG being written
  /// @param candidates  the places to try, in order of preference
  /// @param text  the label (escaped here)
  /// @param attrs  extra attributes of the element (e.g. ` fill="#333333"`)
  /// @param owner  the item the text labels: obstacles of the same owner do not block it
  /// @param force  a text the plot cannot do without: drawn at the first candidate if none is
  ///               free
  /// @return whether the text was drawn (nothing is appended when it was not)
  bool place(std::string& out, const std::vector<TextSpec>& candidates, const std::string& text,
             const std::string& attrs, int owner = -1, bool force = false);
  /// @brief A drawn mark no label may cover, except the labels of @p owner (-1: none).
  void add_obstacle(const TextBox& box, int owner = -1);
  /// @brief The straight line from (x0, y0) to (x1, y1) in pixels, @p half_width either side,
  /// as an obstacle (nothing is added for a line of no length).
  void add_segment_obstacle(double x0, double y0, double x1, double y1, int owner,
                            double half_width);
  /// @brief The boxes of every text placed, in placement order; leaves the placer empty.
  std::vector<TextBox> take_placed() { return std::move(placed_); }

 private:
  bool is_free(const TextBox& box, int owner) const;

  double width_, height_;
  std::vector<TextBox> placed_;
  std::vector<TextBox> obstacles_;
  std::vector<int> obstacle_owner_;  ///< the item that drew each obstacle (-1: none)
};

}  // namespace inferlab
