// chrome_trace_several.cpp: several recordings' tracks and clocks placed in
// one trace (see the header); chrome_trace.cpp writes them.
#include "output/chrome_trace_several.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include "output/trace_json.h"

namespace gpuprof {
namespace {

// Track pids: a recording's own pid, unless an earlier track took it
// (hosts reuse pids; the same file given twice): then above every Linux
// pid (at most 2^22) and every GPU track, in steps of 2^23.
constexpr int64_t kGpuPidBase = int64_t{1} << 22;  // GPU tracks: kGpuPidBase + part * kGpuPidsPerPart + device
constexpr int64_t kGpuPidsPerPart = 1024;
constexpr int64_t kRepeatedPidStep = int64_t{1} << 23;
// process_sort_index: a part's track at part * kSortStep, its GPUs right after.
constexpr int64_t kSortStep = 1024;

std::optional<uint32_t> rank_of(const Recording& recording) {
  const JobRank* rank = job_rank_of(recording.job_ranks, recording.process.pid);
  return rank ? std::optional<uint32_t>(rank->rank) : std::nullopt;
}

// 2026-11-27T02:03:32.345678901Z
std::string utc_text(uint64_t realtime_ns) {
  const std::time_t seconds = static_cast<std::time_t>(realtime_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%09lluZ",
                static_cast<unsigned long long>(realtime_ns % 1'000'000'000));
  return text;
}

void append_member(std::string& out, std::string_view key, std::string_view value) {
  out += '"';
  out += key;
  out += "\":\"";
  append_json_string(out, value);
  out += '"';
}

uint64_t earliest_start(const std::vector<TraceInput>& inputs) {
  uint64_t zero = UINT64_MAX;
  for (const TraceInput& input : inputs) zero = std::min(zero, input.recording->clock.start_realtime_ns);
  return zero;
}

}  // namespace

Result<std::vector<TracePart>> place_trace_parts(const std::vector<TraceInput>& inputs) {
  for (const TraceInput& input : inputs) {
    if (input.recording->clock.start_realtime_ns == 0)
      return Error(input.file + " holds no wall-clock time of its start (its CLOCK chunk's CLOCK_REALTIME is 0): "
                                "its events cannot be placed beside the other recordings'");
  }
  // Ranks first, by rank (a stable sort keeps the order given among equals
  // and among the recordings without a rank, which come last).
  std::vector<size_t> order(inputs.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const std::optional<uint32_t> ra = rank_of(*inputs[a].recording), rb = rank_of(*inputs[b].recording);
    return ra && (!rb || *ra < *rb);
  });
  const uint64_t zero = earliest_start(inputs);
  std::vector<TracePart> parts;
  std::set<int64_t> pids;
  for (size_t i : order) {
    const Recording& recording = *inputs[i].recording;
    const std::optional<uint32_t> rank = rank_of(recording);
    TracePart part;
    part.recording = &recording;
    part.calls = inputs[i].calls;
    part.pid = recording.process.pid;
    while (!pids.insert(part.pid).second) part.pid += kRepeatedPidStep;
    const std::string owner = rank ? "rank " + std::to_string(*rank) : inputs[i].file;
    part.name = owner + ": " + (recording.process.comm.empty() ? "target" : recording.process.comm) + " (" +
                std::to_string(recording.process.pid) + ")";
    part.labels = (recording.process.hostname.empty() ? "" : "host " + recording.process.hostname + ", ") + "file " +
                  inputs[i].file;
    const int64_t index = static_cast<int64_t>(parts.size());
    part.sort_index = index * kSortStep;
    part.first_gpu_pid = kGpuPidBase + index * kGpuPidsPerPart;
    part.gpu_prefix = owner + ": ";
    // t - start_monotonic + start_realtime - zero = t - zero_monotonic.
    part.zero_monotonic_ns = recording.clock.start_monotonic_ns - (recording.clock.start_realtime_ns - zero);
    parts.push_back(std::move(part));
  }
  return parts;
}

std::string several_trace_other_data(const std::vector<TraceInput>& inputs, const std::vector<TracePart>& parts,
                                     const ChromeTraceOptions& options) {
  const uint64_t zero = earliest_start(inputs);
  std::string out;
  append_member(out, "producer", "gpuprof");
  out += ',';
  append_member(out, "time zero",
                "the earliest recording's start: CLOCK_REALTIME " + std::to_string(zero) + " ns (" + utc_text(zero) +
                    ")");
  out += ',';
  append_member(out, "alignment",
                "wall-clock time: each recording's CLOCK_MONOTONIC timestamps are placed on CLOCK_REALTIME by the "
                "pair of clock readings its file holds from its start; recordings of one host line up as its "
                "clocks do, recordings of different hosts to the precision of their clocks' synchronisation "
                "(NTP: typically a millisecond or better on a LAN); a clock stepped during a recording is not "
                "followed");
  out += ',';
  append_member(out, "times", "raw: as the probes stamped them, the probes' own time included (each recording's "
                              "calibration in its entry of recordings)");
  out += ",\"recordings\":[";
  for (size_t i = 0; i < parts.size(); i++) {
    const Recording& recording = *parts[i].recording;
    auto input = std::find_if(inputs.begin(), inputs.end(),
                              [&](const TraceInput& in) { return in.recording == &recording; });
    out += i ? ",{" : "{";
    append_member(out, "process", parts[i].name);
    out += ",\"pid\":" + std::to_string(parts[i].pid) + ',';
    append_member(out, "file", input->file);
    out += ',';
    append_member(out, "host", recording.process.hostname);
    if (const std::optional<uint32_t> rank = rank_of(recording)) out += ",\"rank\":" + std::to_string(*rank);
    out += ',';
    append_member(out, "command", recording.process.cmdline);
    out += ',';
    append_member(out, "start", "CLOCK_REALTIME " + std::to_string(recording.clock.start_realtime_ns) +
                                    " ns, CLOCK_MONOTONIC " + std::to_string(recording.clock.start_monotonic_ns) +
                                    " ns");
    // What its events' times are later here than in its own trace (report
    // FILE --chrome-trace, whose zero is its start).
    out += ",\"shift_ns\":" + std::to_string(recording.clock.start_realtime_ns - zero);
    if (recording.probe_costs)
      out += ",\"probe_ns_per_op_call\":" + std::to_string(recording.probe_costs->total_ns());
    out += '}';
  }
  out += ']';
  if (!options.ops_pattern.empty()) {
    out += ',';
    append_member(out, "ops", options.ops_pattern);
  }
  return out;
}

Result<ChromeTraceStats> write_chrome_trace_of_several(const std::vector<TraceInput>& inputs,
                                                       const ChromeTraceOptions& options,
                                                       const std::function<void(std::string_view)>& write) {
  ASSIGN_OR_RETURN(const std::vector<TracePart> parts, place_trace_parts(inputs));
  return write_chrome_trace(parts, options, several_trace_other_data(inputs, parts, options), write);
}

}  // namespace gpuprof
