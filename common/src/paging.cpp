// Chapter 05's measurements of KV memory.
#include "inferlab/paging.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/kv_calc.hpp"
#include "inferlab/timer.hpp"

namespace inferlab {

MemorySummary memory_summary(const EngineRun& run) {
  MemorySummary m;
  m.allocator = run.allocator;
  m.kv_bytes_budget = run.kv_capacity_tokens * run.kv_bytes_per_token;
  double wasted = 0.0, reserved = 0.0;
  for (const EngineStep& s : run.steps) {
    m.peak_kv_bytes_used = std::max(m.peak_kv_bytes_used, s.kv_used * run.kv_bytes_per_token);
    m.peak_kv_bytes_reserved =
        std::max(m.peak_kv_bytes_reserved, s.kv_reserved * run.kv_bytes_per_token);
    m.max_concurrent_sequences = std::max(m.max_concurrent_sequences, s.running);
    m.peak_bytes_saved_by_sharing =
        std::max(m.peak_bytes_saved_by_sharing,
                 (s.kv_logical - std::min(s.kv_logical, s.kv_used)) * run.kv_bytes_per_token);
    const double dt = std::max(s.end - s.start, 0.0);
    wasted += dt * double(s.kv_reserved - std::min(s.kv_used, s.kv_reserved));
    reserved += dt * double(s.kv_reserved);
  }
  m.waste_fraction = reserved > 0.0 ? wasted / reserved : 0.0;
  m.preemptions = run.preemptions;
  m.swapped_bytes = run.swapped_bytes;
  m.throughput_tokens_per_s = run.metrics.throughput_tokens;
  m.block_size = run.block_size;
  m.blocks_total = run.block_size > 0 ? run.kv_capacity_tokens / std::size_t(run.block_size) : 0;
  return m;
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
  SvgPlot plot(fmt::format("Block tables at t = {:.3f} s (most blocks in use): logical block -> "
                           "physical block, {} positions each",
                           snapshot.time, block_size),
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
  std::ofstream out(path);
  out << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n",
                     width, y)
      << body << "</svg>\n";
  if (!out) throw Error(fmt::format("cannot write {}", path));
}

SwapVsRecompute swap_vs_recompute(const ModelConfig& config, const Hardware& hardware,
                                  const CostOptions& cost, long tokens,
                                  double link_bytes_per_s) {
  SwapVsRecompute r;
  r.tokens = tokens;
  const double bytes = double(tokens) * kv_bytes_per_token(config, cost.kv_dtype);
  r.swap_seconds = 2.0 * bytes / link_bytes_per_s;
  StepShape shape;
  shape.add_prefill(tokens, 0);
  r.recompute_seconds = step_time_seconds(config, hardware, shape, cost);
  return r;
}

double measure_attention_step_seconds(const ModelConfig& config, int seqs, int context,
                                      int block_size, int reps) {
  const int KV = config.kv_dim(), Nh = config.n_heads, Nkv = config.n_kv_heads;
  const int hs = config.head_size();
  const int B = block_size > 0 ? block_size : context;
  const int per_seq = (context + B - 1) / B;
  const int blocks = per_seq * seqs;
  std::vector<float> keys(std::size_t(blocks) * B * KV), values(keys.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : keys) x = u(rng);
  for (float& x : values) x = u(rng);
  // Physical blocks handed out in a shuffled order, as a busy pool would.
  std::vector<int> ids(static_cast<std::size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  if (block_size > 0) std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<float> q(std::size_t(Nh) * hs), out(q.size());
  for (float& x : q) x = u(rng);
  const int pos = context - 1;
  std::vector<double> times;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const double t0 = now_seconds();
    for (int s = 0; s < seqs; ++s) {
      kernels::KVRowsView k;
      kernels::KVRowsView v;
      if (block_size > 0) {
        k = {kernels::KVType::f32, keys.data(), nullptr, &ids[std::size_t(s * per_seq)], B};
        v = {kernels::KVType::f32, values.data(), nullptr, &ids[std::size_t(s * per_seq)], B};
      } else {  // contiguous: sequence s owns rows s*context.. of the same storage
        k = {kernels::KVType::f32, keys.data() + std::size_t(s) * context * KV, nullptr, nullptr, 0};
        v = {kernels::KVType::f32, values.data() + std::size_t(s) * context * KV, nullptr, nullptr, 0};
      }
      kernels::attention_kv_cpu(out.data(), q.data(), k, v, &pos, 1, Nh, Nkv, hs);
    }
    times.push_back(now_seconds() - t0);
  }
  std::nth_element(times.begin(), times.begin() + std::ptrdiff_t(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace inferlab
