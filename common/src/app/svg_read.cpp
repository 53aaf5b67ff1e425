// Reading a saved plot back: its pictures, their sizes and the boxes of their texts.
#include "inferlab/app/svg_read.hpp"

#include <sstream>
#include <utility>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// The value of attribute @p name in a tag's text ("" when it has none).
std::string attribute(const std::string& tag, const std::string& name) {
  const std::size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return {};
  const std::size_t begin = at + name.size() + 3;
  return tag.substr(begin, tag.find('"', begin) - begin);
}

std::string xml_unescape(std::string t) {
  for (auto [from, to] :
       {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}})
    for (std::size_t at = t.find(from); at != std::string::npos; at = t.find(from, at + 1))
      t.replace(at, std::string(from).size(), to);
  return t;
}

}  // namespace

std::vector<std::string> svg_pictures(const std::string& file) {
  std::vector<std::string> out;
  for (std::size_t at = file.find("<svg"); at != std::string::npos;) {
    const std::size_t next = file.find("<svg", at + 4);
    out.push_back(file.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return out;
}

SvgSize svg_picture_size(const std::string& svg) {
  const std::string tag = svg.substr(0, svg.find('>'));
  const std::string w = attribute(tag, "width"), h = attribute(tag, "height");
  return {w.empty() ? 0 : std::stoi(w), h.empty() ? 0 : std::stoi(h)};
}

std::vector<TextBox> read_text_boxes(const std::string& svg) {
  std::vector<TextBox> boxes;
  for (std::size_t at = svg.find("<text "); at != std::string::npos;
       at = svg.find("<text ", at + 1)) {
    const std::size_t tag_end = svg.find('>', at), close = svg.find("</text>", at);
    if (tag_end == std::string::npos || close == std::string::npos)
      throw Error("read_text_boxes: a <text> element is not closed");
    const std::string tag = svg.substr(at, tag_end - at);
    TextSpec s{std::stod(attribute(tag, "x")), std::stod(attribute(tag, "y"))};
    const std::string anchor = attribute(tag, "text-anchor");
    s.anchor = anchor == "middle" ? TextAnchor::middle
               : anchor == "end"  ? TextAnchor::end
                                  : TextAnchor::start;
    s.central = attribute(tag, "dominant-baseline") == "central";
    if (const std::string fs = attribute(tag, "font-size"); !fs.empty())
      s.font_size = std::stod(fs);
    if (const std::string tr = attribute(tag, "transform"); tr.rfind("rotate(", 0) == 0) {
      std::istringstream in(tr.substr(7));
      in >> s.angle >> s.rx >> s.ry;
    }
    boxes.push_back(text_box(s, xml_unescape(svg.substr(tag_end + 1, close - tag_end - 1))));
  }
  return boxes;
}

}  // namespace inferlab
