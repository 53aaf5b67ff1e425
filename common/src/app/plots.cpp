// The chapters' pictures of core results (see plots.hpp).
#include "inferlab/app/plots.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

SvgPlot step_latency_plot(const std::vector<StepLatency>& steps, const std::string& model) {
  SvgPlot plot("Step latency: naive loop vs KV cache (" + model + ")");
  plot.set_x_axis("position (tokens already in the sequence)", AxisScale::linear);
  plot.set_y_axis("step time (ms)", AxisScale::log);
  std::vector<double> x, naive, cached;
  for (const StepLatency& s : steps) {
    x.push_back(s.position);
    naive.push_back(s.naive_s * 1e3);
    cached.push_back(s.cached_s * 1e3);
  }
  plot.add_line("naive: re-forward the whole sequence", x, naive);
  plot.add_line("KV cache: forward one token", x, cached);
  plot.set_legend(LegendPosition::top_left);
  return plot;
}

SvgPlot roofline_plot(const Hardware& hw, const std::vector<RooflinePoint>& points,
                      const std::string& title) {
  const double ridge = hw.ridge_point();
  double x_lo = 0.1, x_hi = ridge * 30.0;
  for (const RooflinePoint& p : points) {
    if (p.intensity > 0.0) x_lo = std::min(x_lo, p.intensity / 2.0);
    x_hi = std::max(x_hi, p.intensity * 3.0);
  }
  // GFLOP/s for a CPU, TFLOP/s for an accelerator: tick labels stay short either way.
  const bool tera = hw.peak_flops >= 1e13;
  const double scale = tera ? 1e12 : 1e9;
  const char* unit = tera ? "TFLOP/s" : "GFLOP/s";
  SvgPlot plot(title, 900, 560);
  plot.set_x_axis("arithmetic intensity (FLOP/byte)", AxisScale::log);
  // Headroom above the compute roof, so its label and the points on it stay inside the frame.
  plot.set_y_axis(fmt::format("attainable {} ({})", unit, hw.dtype), AxisScale::log, SvgPlot::kAuto,
                  hw.peak_flops / scale * 4.0);
  plot.set_legend(LegendPosition::bottom_right);
  const std::string bandwidth = hw.bandwidth >= 1e12
                                    ? fmt::format("{:.3g} TB/s", hw.bandwidth / 1e12)
                                    : fmt::format("{:.3g} GB/s", hw.bandwidth / 1e9);
  plot.add_segment(x_lo, hw.bandwidth * x_lo / scale, ridge, hw.peak_flops / scale,
                   "memory roof: " + bandwidth, {"#1f4e9c", 2.5, false, 1.0});
  // The compute roof's label goes above the line near the ridge, clear of the labels of the
  // points that sit on the roof.
  plot.add_segment(ridge, hw.peak_flops / scale, x_hi, hw.peak_flops / scale, "",
                   {"#b03a2e", 2.5, false, 1.0});
  plot.add_text(ridge * 1.3, hw.peak_flops / scale * 1.7,
                fmt::format("compute roof: {:.4g} {}", hw.peak_flops / scale, unit),
                TextAnchor::start, "#b03a2e");
  plot.add_vline(ridge, fmt::format("ridge I* = {:.3g} FLOP/B", ridge),
                 {"#777777", 1.0, true, 1.0});
  std::vector<double> ax, ay, mx, my;
  std::vector<std::string> al, ml;
  for (const RooflinePoint& p : points) {
    if (!(p.intensity > 0.0) || !(p.flops_per_second > 0.0)) continue;
    (p.measured ? mx : ax).push_back(p.intensity);
    (p.measured ? my : ay).push_back(p.flops_per_second / scale);
    (p.measured ? ml : al).push_back(p.label);
  }
  if (!ax.empty()) plot.add_points("model (attainable)", ax, ay, {"#2ca02c", 4.5, false, 0.85}, al);
  if (!mx.empty())
    plot.add_points("measured on this machine", mx, my, {"#ff7f0e", 5.0, false, 1.0}, ml);
  return plot;
}

SvgPlot kv_memory_plot(const std::vector<const EngineRun*>& runs, const std::string& title) {
  SvgPlot plot(title, 1200, 480);
  plot.set_x_axis("time (s)");
  plot.set_y_axis("KV memory (MiB)", AxisScale::linear, 0.0);
  plot.set_legend(LegendPosition::top_right);
  const char* colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
  double budget = 0.0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const EngineRun& r = *runs[i];
    std::vector<double> t, used, reserved;
    for (const EngineStep& s : r.steps) {
      // Each step's level holds from its start to its end: draw it as a staircase.
      for (double x : {s.start, s.end}) {
        t.push_back(x);
        used.push_back(double(s.kv_used * r.kv_bytes_per_token) / (1 << 20));
        reserved.push_back(double(s.kv_reserved * r.kv_bytes_per_token) / (1 << 20));
      }
    }
    const std::string colour = colours[i % 4];
    plot.add_line(r.allocator + ": reserved", t, reserved, {colour, 2.0, false, 1.0});
    plot.add_line(r.allocator + ": used", t, used, {colour, 1.5, true, 1.0});
    budget = std::max(budget, double(r.kv_capacity_tokens * r.kv_bytes_per_token) / (1 << 20));
  }
  if (budget > 0.0) plot.add_hline(budget, "budget", {"#555555", 1.0, true, 1.0});
  return plot;
}

SvgPlot block_table_plot(const BlockTableSnapshot& snapshot, int block_size, int max_rows) {
  const int rows = std::min<int>(max_rows, static_cast<int>(snapshot.tables.size()));
  std::size_t cols = 1;
  for (int r = 0; r < rows; ++r) cols = std::max(cols, snapshot.tables[std::size_t(r)].size());
  // Say what the panel leaves out: the rows beyond max_rows.
  const int all_rows = static_cast<int>(snapshot.tables.size());
  const std::string shown =
      rows < all_rows ? fmt::format("; the first {} of {} sequences shown", rows, all_rows) : "";
  SvgPlot plot(fmt::format("Block tables at t = {:.3f} s, the most scattered moment ({} of {} "
                           "logical neighbours not neighbours in the pool{}): logical block -> "
                           "physical block, {} positions each",
                           snapshot.time, snapshot.scattered,
                           snapshot.blocks - std::min(snapshot.blocks, snapshot.tables.size()),
                           shown, block_size),
               1200, std::max(150, 80 + 36 * std::max(rows, 1)));  // SvgPlot's least height
  plot.set_legend(LegendPosition::none);
  plot.set_x_axis("logical block", AxisScale::linear, 0.0, double(cols));
  plot.set_y_axis("", AxisScale::linear, 0.0, double(std::max(rows, 1)));
  std::vector<double> yt;
  std::vector<std::string> yl;
  for (int r = 0; r < rows; ++r) {
    yt.push_back(rows - r - 0.5);
    yl.push_back(fmt::format("req {}", snapshot.requests[std::size_t(r)]));
  }
  plot.set_y_ticks(yt, yl);
  // Label a cell only when the cells are wide enough to hold the number.
  const bool labels = cols <= 40;
  for (int r = 0; r < rows; ++r) {
    const auto& table = snapshot.tables[std::size_t(r)];
    for (std::size_t c = 0; c < table.size(); ++c) {
      const double hue = double(table[c] * 47 % 360);
      plot.add_rect(double(c) + 0.05, rows - r - 0.9, double(c) + 0.95, rows - r - 0.1,
                    labels ? std::to_string(table[c]) : "",
                    {fmt::format("hsl({:.0f},60%,70%)", hue), 1.0, false, 0.9});
    }
  }
  return plot;
}

void save_stacked(const std::string& path, const std::vector<const SvgPlot*>& plots) {
  // Each plot is a complete <svg>; nested <svg> elements with a y offset stack them.
  std::string body;
  int y = 0, width = 0;
  for (const SvgPlot* p : plots) {
    std::string svg = p->render();
    if (const auto decl = svg.find("<?xml"); decl != std::string::npos)
      svg.erase(decl, svg.find("?>", decl) + 2 - decl);
    const auto w0 = svg.find("width=\"") + 7, h0 = svg.find("height=\"") + 8;
    const int w = std::stoi(svg.substr(w0)), h = std::stoi(svg.substr(h0));
    svg.insert(svg.find("<svg") + 4, fmt::format(" y=\"{}\"", y));
    body += svg;
    y += h;
    width = std::max(width, w);
  }
  const std::string head = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n", width, y);
  write_file_atomically(path, head + body + "</svg>\n", "--plot");
}

SvgPlot ttft_cdf_plot(const std::vector<const EngineRun*>& runs, const std::string& title) {
  SvgPlot plot(title, 800, 420);
  plot.set_x_axis("time to first token (ms, log scale)", AxisScale::log);
  plot.set_y_axis("fraction of requests with a TTFT at most this", AxisScale::linear, 0.0, 1.0);
  // A CDF fills the plot area's corners (0 at the left, 1 at the right): the legend goes above
  // it, where it covers no curve.
  plot.set_legend(LegendPosition::above);
  for (const EngineRun* run : runs) {
    std::vector<double> t;
    for (const RequestResult& r : run->requests)
      if (r.branch == 0) t.push_back(std::max(r.metrics.ttft * 1e3, 1e-3));
    std::sort(t.begin(), t.end());
    std::vector<double> x, y;
    for (std::size_t i = 0; i < t.size(); ++i) {  // a staircase: up by 1/n at every sample
      x.push_back(t[i]);
      y.push_back(double(i) / double(t.size()));
      x.push_back(t[i]);
      y.push_back(double(i + 1) / double(t.size()));
    }
    const PrefixSummary s = prefix_summary(*run);
    plot.add_line(fmt::format("cache {}: p50 {:.3g} ms, p99 {:.3g} ms", run->prefix_cache,
                              s.ttft_p50 * 1e3, s.ttft_p99 * 1e3),
                  x, y);
  }
  return plot;
}

void save_prefix_plots(const std::string& path, const std::vector<EngineRun>& runs,
                       const std::string& title) {
  std::vector<const EngineRun*> views;
  for (const EngineRun& r : runs) views.push_back(&r);
  const SvgPlot ttft = ttft_cdf_plot(views, title);
  std::vector<const SvgPlot*> plots = {&ttft};
  std::optional<SvgPlot> trie;
  for (const EngineRun& r : runs)
    if (!r.trie.empty())
      trie.emplace(trie_plot(r.trie,
                             "The radix trie at the end of the run (each node: tokens on its "
                             "edge / matches through it; darker = more matches)"));
  if (trie) plots.push_back(&*trie);
  save_stacked(path, plots);
}

SvgPlot trie_plot(const std::vector<TrieNodeView>& trie, const std::string& title, int max_nodes) {
  const int n = std::min<int>(max_nodes, static_cast<int>(trie.size()));
  // Layered layout: x is the node's level, y spreads the leaves evenly (depth-first order) and
  // puts each parent at the middle of its children.
  std::vector<std::vector<int>> children(std::size_t(std::max(n, 1)));
  std::vector<int> level(std::size_t(std::max(n, 1)), 0);
  for (int i = 1; i < n; ++i) {
    const int p = trie[std::size_t(i)].parent;
    children[std::size_t(p)].push_back(i);  // breadth first: the parent came before
    level[std::size_t(i)] = level[std::size_t(p)] + 1;
  }
  std::vector<double> y(std::size_t(std::max(n, 1)), 0.0);
  double next_leaf = 0.0;
  // Post-order without recursion: a stack of (node, children visited).
  std::vector<std::pair<int, bool>> stack = {{0, false}};
  while (n > 0 && !stack.empty()) {
    auto [v, done] = stack.back();
    stack.pop_back();
    const auto& ch = children[std::size_t(v)];
    if (ch.empty()) {
      y[std::size_t(v)] = next_leaf++;
    } else if (!done) {
      stack.push_back({v, true});
      for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back({*it, false});
    } else {
      y[std::size_t(v)] = (y[std::size_t(ch.front())] + y[std::size_t(ch.back())]) / 2;
    }
  }
  const int levels = n > 0 ? *std::max_element(level.begin(), level.begin() + n) + 1 : 1;
  const double rows = std::max(next_leaf, 1.0);
  SvgPlot plot(n < static_cast<int>(trie.size())
                   ? fmt::format("{} (the first {} of {} nodes)", title, n, trie.size())
                   : title,
               std::clamp(170 * levels, 800, 1200), std::max(300, int(60 + 30 * rows)));
  plot.set_legend(LegendPosition::none);
  plot.set_x_axis("trie level (root at 0)", AxisScale::linear, -0.5, levels - 0.5);
  plot.set_y_axis("leaves: tokens from the root", AxisScale::linear, -0.8, rows - 0.2);
  std::vector<double> ticks;
  for (int l = 0; l < levels; ++l) ticks.push_back(l);
  plot.set_x_ticks(ticks);
  // One row per leaf, labelled with the length of the sequence it ends (every k-th leaf when
  // there are too many rows for a label each).
  std::vector<int> depth_tokens(std::size_t(std::max(n, 1)), 0);
  for (int i = 1; i < n; ++i)
    depth_tokens[std::size_t(i)] =
        depth_tokens[std::size_t(trie[std::size_t(i)].parent)] + trie[std::size_t(i)].tokens;
  const int every = std::max(1, static_cast<int>(rows) / 40 + 1);
  std::vector<double> yt;
  std::vector<std::string> yl;
  for (int i = 1; i < n; ++i) {
    const int leaf_row = static_cast<int>(y[std::size_t(i)]);
    if (!children[std::size_t(i)].empty() || leaf_row % every != 0) continue;
    yt.push_back(rows - 1 - y[std::size_t(i)]);
    yl.push_back(fmt::format("{} tok", depth_tokens[std::size_t(i)]));
  }
  plot.set_y_ticks(yt, yl);
  for (int i = 1; i < n; ++i) {
    const int p = trie[std::size_t(i)].parent;
    plot.add_segment(level[std::size_t(p)] + 0.35, rows - 1 - y[std::size_t(p)],
                     level[std::size_t(i)] - 0.35, rows - 1 - y[std::size_t(i)], "",
                     {"#888888", 1.0, false, 1.0});
  }
  int max_hits = 1;
  for (int i = 0; i < n; ++i) max_hits = std::max(max_hits, trie[std::size_t(i)].hits);
  for (int i = 0; i < n; ++i) {
    const TrieNodeView& v = trie[std::size_t(i)];
    const double yy = rows - 1 - y[std::size_t(i)];
    // Darker = more hits.
    const int light = 92 - static_cast<int>(45.0 * v.hits / max_hits);
    // Short enough to fit the box at every level: "edge tokens / hits", as the title says.
    const std::string text = i == 0 ? "root" : fmt::format("{}/{}", v.tokens, v.hits);
    plot.add_rect(level[std::size_t(i)] - 0.35, yy - 0.35, level[std::size_t(i)] + 0.35, yy + 0.35,
                  text, {fmt::format("hsl(210,60%,{}%)", light), 1.0, false, 1.0});
  }
  return plot;
}

SvgPlot speedup_vs_k_plot(const std::vector<ProposerRun>& runs, const std::string& model) {
  SvgPlot plot("Speculative decoding: speed-up vs K (" + model + ")");
  plot.set_x_axis("K (tokens proposed per round)");
  plot.set_y_axis("speed-up over plain decoding");
  std::vector<std::string> names;
  for (const ProposerRun& r : runs)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (const std::string& name : names) {
    std::vector<double> k, measured, predicted;
    for (const ProposerRun& r : runs) {
      if (r.name != name) continue;
      k.push_back(r.k);
      measured.push_back(r.report.speedup_measured);
      predicted.push_back(r.report.speedup_predicted);
    }
    plot.add_line(name + " measured", k, measured);
    SvgStyle dashed;
    dashed.dashed = true;
    plot.add_line(name + " predicted", k, predicted, dashed);
  }
  plot.add_hline(1.0, "plain decoding");
  plot.set_legend(LegendPosition::top_right);
  return plot;
}

SvgPlot speculation_batch_plot(const SpecSimSweep& sweep, const std::string& title) {
  SvgPlot plot(title);
  plot.set_x_axis("batch (sequences decoding together)", AxisScale::log);
  plot.set_y_axis("speed-up over plain decoding");
  for (const SpecSimCurve& c : sweep.curves) {
    std::vector<double> x, y;
    for (const SpecSimPoint& p : c.points) {
      x.push_back(p.batch);
      y.push_back(p.speedup);
    }
    plot.add_line(fmt::format("K = {}", c.k), x, y);
  }
  plot.add_hline(1.0, "plain decoding");
  plot.set_legend(LegendPosition::top_right);
  return plot;
}

}  // namespace inferlab
