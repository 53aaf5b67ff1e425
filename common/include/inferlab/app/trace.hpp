#pragma once
/// @file trace.hpp
/// @brief Pictures of an engine run: a Chrome/Perfetto trace-event JSON (open it in
/// https://ui.perfetto.dev or chrome://tracing) and an SVG Gantt chart with the occupancy.
///
/// Trace-event format (the "JSON Array/Object" format of the Trace Event spec): each run is a
/// process (pid 1, 2, ... named after the policy), each batch slot a thread (tid = slot), and
/// every request a "prefill" span ("X" event, from its first chunk's step to the step that
/// finished its prompt) followed by a "decode" span (to its last token) on its slot's track.
/// The scheduler's own track (tid = max_seqs) has one "step" span per step with its token
/// counts, and counter events ("C") draw running sequences and batched tokens over time.
/// Times are microseconds.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/serving/engine.hpp"
#include "inferlab/app/svg.hpp"

namespace inferlab {

/// @brief The trace of @p runs (one process per run, labelled "<policy> (<clock>)").
/// @return {"traceEvents": [...], "displayTimeUnit": "ms"}
nlohmann::json perfetto_trace(const std::vector<const EngineRun*>& runs);

/// @brief perfetto_trace() written to @p path. @throws inferlab::Error if it cannot be written.
void write_perfetto_trace(const std::string& path, const std::vector<const EngineRun*>& runs);

/// @brief A Gantt chart of @p runs stacked top to bottom on one time axis: one row per slot,
/// a bar per request phase (prefill / decode, labelled with the request id), and the number of
/// running sequences over time drawn as a line in the same band (full band = every slot busy).
SvgPlot gantt_plot(const std::vector<const EngineRun*>& runs, const std::string& title);

}  // namespace inferlab
