#pragma once
/// @file svg_read.hpp
/// @brief Reading a saved plot back: the pictures of a file, a picture's size, and the boxes of
/// its texts, computed as SvgPlot::render() computes them. The tests and `inferlab_svg_check`
/// check saved plots with these (no text overlapping another, none outside its picture).

#include <string>
#include <vector>

#include "inferlab/app/svg_labels.hpp"

namespace inferlab {

/// @brief The pictures of an SVG file: each from one "<svg" to the next. A file stacked from
/// several plots (save_stacked()) is an outer &lt;svg&gt; holding one complete &lt;svg&gt; per
/// plot; the outer one comes first and holds no text of its own.
std::vector<std::string> svg_pictures(const std::string& file);

/// @brief The size a picture's &lt;svg&gt; element declares, in pixels (0 for a missing one).
struct SvgSize {
  int width = 0;   ///< the width="..." attribute
  int height = 0;  ///< the height="..." attribute
};

/// @brief The width and height attributes of the first element of @p svg.
SvgSize svg_picture_size(const std::string& svg);

/// @brief The boxes of the &lt;text&gt; elements of an SVG document written by SvgPlot (one picture:
/// split a stacked file first), computed as render() computes them, from the elements'
/// position, alignment, baseline, font size and rotation. For checking a saved plot.
/// @throws inferlab::Error if a &lt;text&gt; element is not closed
std::vector<TextBox> read_text_boxes(const std::string& svg);

}  // namespace inferlab
