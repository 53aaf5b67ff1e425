// Perfetto trace-event JSON and the SVG Gantt chart of engine runs.
#include "inferlab/app/trace.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

namespace {

// The two phases of one request as seen from the steps: prefill from the start of its first
// step to the end of the step that finished its prompt, decode from there to its last token.
struct Phases {
  int slot = 0;
  double prefill_start = -1.0, prefill_end = 0.0, last_end = 0.0;
  int prefill_chunks = 0, prompt_tokens = 0, tokens = 0;
};

std::map<int, Phases> request_phases(const EngineRun& run) {
  std::map<int, Phases> phases;
  for (const EngineStep& step : run.steps) {
    for (const StepChunk& c : step.chunks) {
      Phases& p = phases[c.request];
      p.slot = c.slot;
      if (c.prefill) {
        if (p.prefill_start < 0) p.prefill_start = step.start;
        p.prefill_end = step.end;
        p.prefill_chunks += 1;
        p.prompt_tokens += c.count;
      }
      if (c.sampled) p.tokens += 1;
      p.last_end = step.end;
    }
  }
  return phases;
}

std::string run_label(const EngineRun& run) {
  return fmt::format("{} ({})", policy_name(run.scheduler.policy), run.clock);
}

constexpr double kMicro = 1e6;  // trace-event times are microseconds

}  // namespace

nlohmann::json perfetto_trace(const std::vector<const EngineRun*>& runs) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const EngineRun& run = *runs[k];
    const int pid = static_cast<int>(k) + 1;
    const int scheduler_tid = run.scheduler.max_seqs;
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", run_label(run)}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    for (int s = 0; s < run.scheduler.max_seqs; ++s)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", s},
                        {"args", {{"name", fmt::format("slot {}", s)}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", scheduler_tid},
                      {"args", {{"name", "scheduler steps"}}}});

    for (const auto& [id, p] : request_phases(run)) {
      events.push_back(
          {{"name", fmt::format("r{} prefill", id)},
           {"cat", "prefill"},
           {"ph", "X"},
           {"pid", pid},
           {"tid", p.slot},
           {"ts", p.prefill_start * kMicro},
           {"dur", (p.prefill_end - p.prefill_start) * kMicro},
           {"args",
            {{"request", id}, {"prompt_tokens", p.prompt_tokens}, {"chunks", p.prefill_chunks}}}});
      if (p.last_end > p.prefill_end) {
        events.push_back({{"name", fmt::format("r{} decode", id)},
                          {"cat", "decode"},
                          {"ph", "X"},
                          {"pid", pid},
                          {"tid", p.slot},
                          {"ts", p.prefill_end * kMicro},
                          {"dur", (p.last_end - p.prefill_end) * kMicro},
                          {"args", {{"request", id}, {"output_tokens", p.tokens}}}});
      }
    }
    for (std::size_t i = 0; i < run.steps.size(); ++i) {
      const EngineStep& s = run.steps[i];
      events.push_back({{"name", "step"},
                        {"cat", "step"},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", scheduler_tid},
                        {"ts", s.start * kMicro},
                        {"dur", (s.end - s.start) * kMicro},
                        {"args",
                         {{"step", i},
                          {"decode_tokens", s.decode_tokens},
                          {"prefill_tokens", s.prefill_tokens},
                          {"running", s.running},
                          {"waiting", s.waiting}}}});
      events.push_back({{"name", "running sequences"},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", s.start * kMicro},
                        {"args", {{"running", s.running}}}});
      events.push_back({{"name", "batched tokens"},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", s.start * kMicro},
                        {"args", {{"decode", s.decode_tokens}, {"prefill", s.prefill_tokens}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_perfetto_trace(const std::string& path, const std::vector<const EngineRun*>& runs) {
  write_file_atomically(path, perfetto_trace(runs).dump() + "\n", "--perfetto");
}

SvgPlot gantt_plot(const std::vector<const EngineRun*>& runs, const std::string& title) {
  if (runs.empty()) throw Error("gantt_plot: no run to draw");
  SvgPlot plot(
      title, 1200,
      160 + 60 * static_cast<int>(runs.size()) +
          static_cast<int>(std::min<long long>(1100, 16LL * static_cast<long long>(runs.size()) *
                                                         runs.front()->scheduler.max_seqs)));
  plot.set_x_axis("time since the first arrival (s)");
  const SvgStyle prefill{"#ff7f0e", 1.0, false, 0.85}, decode{"#1f77b4", 1.0, false, 0.6},
      busy{"#d62728", 1.5, false, 1.0};
  std::vector<double> ticks, busy_ticks;
  std::vector<std::string> labels, busy_labels;
  double band_top = 0.0;
  // Runs are stacked top to bottom; each band has one row per slot and a gap row.
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const EngineRun& run = *runs[k];
    const int B = run.scheduler.max_seqs;
    const double base = band_top - B - 1.0;  // row of slot 0 is base, slot B-1 is base + B - 1
    band_top = base - 1.0;
    for (const auto& [id, p] : request_phases(run)) {
      const double y = base + (B - 1 - p.slot);  // slot 0 at the top of its band
      plot.add_rect(p.prefill_start, y - 0.4, p.prefill_end, y + 0.4, "", prefill);
      if (p.last_end > p.prefill_end)
        plot.add_rect(p.prefill_end, y - 0.4, p.last_end, y + 0.4, fmt::format("r{}", id), decode);
    }
    std::vector<double> x, y;
    for (const EngineStep& s : run.steps) {
      const double level = base - 0.5 + s.running;  // full band = every slot busy
      x.insert(x.end(), {s.start, s.end});
      y.insert(y.end(), {level, level});
    }
    plot.add_line(k == 0 ? "running sequences (scale on the right)" : "", x, y, busy);
    // Its own scale: 0 at the bottom of the band, every slot busy at the top.
    busy_ticks.insert(busy_ticks.end(), {base - 0.5, base - 0.5 + B});
    busy_labels.insert(busy_labels.end(), {"0", std::to_string(B)});
    // The band's name in the gap row above it (tick labels are too narrow for it).
    plot.add_text(0.0, base + B - 0.3, run_label(run), TextAnchor::start, "#000000", 13);
    ticks.insert(ticks.end(), {base + B - 1, base});
    labels.insert(labels.end(), {"slot 0", fmt::format("slot {}", B - 1)});
  }
  plot.set_y_axis("", AxisScale::linear, band_top + 0.5, 0.0);
  plot.set_y_ticks(ticks, labels);
  plot.set_right_ticks(busy_ticks, busy_labels, "running sequences");
  plot.add_legend_entry("prefill", prefill);
  plot.add_legend_entry("decode (label: request id, where the bar has room)", decode);
  // Above the plot: inside it the legend would cover the bars or the running line.
  plot.set_legend(LegendPosition::above);
  return plot;
}

}  // namespace inferlab
