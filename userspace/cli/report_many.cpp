// cli/report_many.cpp: report A B ... (cli/report_many.h).
#include "cli/report_many.h"

#include <cstdio>
#include <deque>
#include <optional>
#include <variant>

#include "analyze/aggregator.h"
#include "analyze/process_filter.h"
#include "analyze/profile_merge.h"
#include "output/chrome_trace_several.h"
#include "output/folded_several.h"
#include "output/job_rank_line.h"
#include "output/op_table.h"
#include "output/spread_table.h"
#include "cli/option_checks.h"
#include "cli/report_reads.h"
#include "cli/trace_export.h"

namespace gpuprof::cli {
namespace {

// What one view of several recordings cannot show yet: refused, not ignored.
const char* unsupported_option(const ReportOptions& o) {
  if (o.launches) return "--launches";
  if (o.kernels) return "--kernels";
  if (o.gpu) return "--gpu";
  if (!o.trace.speedscope.empty()) return "--speedscope";
  if (!o.pids.empty() || !o.comms.empty()) return "--pid/--comm";
  return nullptr;
}

// "a.gpuprof: vm:4242 (python3)": a unit as the notes name it.
std::string unit_name(const ProfileUnit& unit) {
  return unit.file + ": " + spread_group(unit, SpreadKey::kPid);
}

// The job rank of a recording of one process.
std::optional<JobRank> rank_of(const Recording& recording) {
  const JobRank* rank = job_rank_of(recording.job_ranks, recording.process.pid);
  return rank ? std::optional<JobRank>(*rank) : std::nullopt;
}

// The read add_units_of starts from: streamed (read_for_table), or whole
// with the test hook; the exit status of a read that failed.
std::variant<StreamedTable, Recording, int> read_for_units(const std::string& path, const ReportOptions& options) {
  if (streaming_allowed())
    return read_for_table(path, options.strict, options.raw_times, /*filtered=*/false,
                          TableGrouping{.by_input_shape = options.group_by_input_shape,
                                        .by_stack_n = options.group_by_stack_n});
  if (std::optional<Recording> whole = read_recording_for_output(path, options.strict)) return std::move(*whole);
  return 1;
}

// Adds the table of each process of the recording at `path` to `units`:
// read as a stream where it can be (report_reads.h, read_for_table), else
// whole and aggregated; a system-wide recording's, one unit per process
// with op events. `recording`: the recording read (without its events when
// streamed). The exit status of a read that failed.
std::optional<int> add_units_of(const std::string& path, const ReportOptions& options, std::vector<ProfileUnit>& units,
                                std::optional<Recording>& recording) {
  std::variant<StreamedTable, Recording, int> read = read_for_units(path, options);
  if (const int* status = std::get_if<int>(&read)) return *status;
  if (StreamedTable* streamed = std::get_if<StreamedTable>(&read);
      streamed && streamed->tables.has_value() == is_system_wide(streamed->recording)) {
    recording = std::move(streamed->recording);
    if (streamed->profile) {
      units.push_back({path, recording->process, std::move(*streamed->profile), rank_of(*recording)});
      return std::nullopt;
    }
    for (auto& [pid, profile] : streamed->tables->profiles) {
      const Recording one = select_processes(*recording, {pid});
      units.push_back({path, one.process, std::move(profile), rank_of(one)});
    }
    return std::nullopt;
  }
  // Read whole: it cannot stream, or it turned system-wide between the
  // reads (a recording still being written).
  if (Recording* whole = std::get_if<Recording>(&read))
    recording = std::move(*whole);
  else
    recording = read_recording_for_output(path, options.strict);
  if (!recording) return 1;
  AggregateOptions aggregate_options;
  aggregate_options.raw_times = options.raw_times;
  aggregate_options.group_by_input_shape = options.group_by_input_shape;
  aggregate_options.group_by_stack_n = options.group_by_stack_n;
  if (!is_system_wide(*recording)) {
    units.push_back({path, recording->process, aggregate(*recording, aggregate_options), rank_of(*recording)});
    return std::nullopt;
  }
  for (const auto& [pid, activity] : process_activity(*recording)) {
    if (activity.events == 0) continue;
    const Recording one = select_processes(*recording, {pid});
    units.push_back({path, one.process, aggregate(one, aggregate_options), rank_of(one)});
  }
  return std::nullopt;
}

// Reads the recording at `path` as one file's output reads it: streamed
// where it can be (read(): one of report_reads.h's read_for_*), what the
// stream made into `part`; else (or with the test hook) whole. The exit
// status of a read that failed.
template <typename Read, typename Streamed, typename Part>
std::optional<int> read_streamed_or_whole(const std::string& path, bool strict, Read read, Part Streamed::*member,
                                          std::optional<Recording>& recording, std::optional<Part>& part) {
  if (streaming_allowed()) return take_read(read(), member, recording, part);
  recording = read_recording_for_output(path, strict);
  return recording ? std::nullopt : std::optional<int>(1);
}

// Adds the stacks of the recording at `path` to `merged`, under its root
// (folded_several.h): read as one file's --folded reads it (report_reads.h,
// read_for_folded: streamed where it can be), else whole. `recording`: the
// recording read (without its events when streamed). The exit status of a
// read that failed.
std::optional<int> add_folded_of(const std::string& path, const ReportOptions& options, FoldedMetric metric,
                                 FoldedStacks& merged, std::optional<Recording>& recording) {
  std::optional<FoldedStacks> streamed;
  if (std::optional<int> failed = read_streamed_or_whole(
          path, options.strict, [&] { return read_for_folded(path, options.strict, metric, options.raw_times); },
          &StreamedFolded::folded, recording, streamed))
    return failed;
  // Not one conditional expression: it would copy the streamed stacks.
  if (streamed)
    add_recording_stacks(merged, {&*recording, path}, *streamed);
  else
    add_recording_stacks(merged, {&*recording, path}, folded_stacks_by_process(*recording, metric, options.raw_times));
  return std::nullopt;
}

// Reads the recording at `path` for --pprof: its stacks summed as it
// streams (report_reads.h, read_for_pprof) where it can be, into `sums`,
// else whole. The exit status of a read that failed.
std::optional<int> read_pprof_of(const std::string& path, const ReportOptions& options,
                                 std::optional<Recording>& recording, std::optional<StreamedPprofSums>& sums) {
  return read_streamed_or_whole(
      path, options.strict, [&] { return read_for_pprof(path, options.strict, options.raw_times); },
      &StreamedPprof::sums, recording, sums);
}

// Reads the recording at `path` for --chrome-trace: its calls spilled as it
// streams (report_reads.h, read_for_trace) where it can be, into `calls`,
// else whole. A system-wide recording is read whole: the trace of several
// gives each of its processes a track of its own, which its calls, replayed
// as one, are not split into (read again if it turned system-wide after
// the first read: a recording still being written). The exit status of a
// read that failed.
std::optional<int> read_trace_of(const std::string& path, const ReportOptions& options,
                                 const ChromeTraceOptions& trace, std::optional<Recording>& recording,
                                 std::optional<StreamedTraceCalls>& calls) {
  if (std::optional<int> failed = read_streamed_or_whole(
          path, options.strict,
          [&] { return read_for_trace(path, options.strict, {.ops = trace.ops, .system_wide = false}); },
          &StreamedTrace::calls, recording, calls))
    return failed;
  if (!calls || !is_system_wide(*recording)) return std::nullopt;
  calls.reset();
  recording = read_recording_for_output(path, options.strict);
  return recording ? std::nullopt : std::optional<int>(1);
}

}  // namespace

int run_report_many(const ReportOptions& options) {
  if (const char* option = unsupported_option(options)) {
    std::fprintf(stderr, "gpuprof: error: %s reads one recording; several are read as one table or with --by\n",
                 option);
    return 2;
  }
  std::optional<SpreadKey> by;
  if (!options.by.empty()) {
    by = cli::parse_option_value(parse_spread_key, options.by);
    if (!by) return 2;
  }
  auto sort_key = cli::parse_option_value(parse_sort_key, options.sort_by);
  if (!sort_key) return 2;
  const std::vector<std::string> paths =
      options.input_paths.empty() ? std::vector<std::string>{options.input_path} : options.input_paths;
  const bool table = !options.folded && options.trace.output.empty() && options.trace.pprof.empty();
  // What --by cannot go with, and the other views' options, refused before
  // anything is read.
  if (by && options.folded) {
    std::fprintf(stderr, "gpuprof: error: --by prints a table; --folded puts each recording under its rank "
                         "or file instead\n");
    return 2;
  }
  if (by && !options.trace.output.empty()) {
    std::fprintf(stderr, "gpuprof: error: --by prints a table; --chrome-trace gives each rank (or file) a "
                         "process track instead\n");
    return 2;
  }
  if (by && !options.trace.pprof.empty()) {
    std::fprintf(stderr, "gpuprof: error: --by prints a table; --pprof labels each process of the profile instead\n");
    return 2;
  }
  std::optional<FoldedMetric> metric;
  if (options.folded && !(metric = cli::parse_option_value(parse_folded_metric, options.metric))) return 2;
  std::optional<ChromeTraceOptions> trace;
  if (!options.folded && !options.trace.output.empty() && !(trace = chrome_trace_options(options.trace))) return 2;
  std::vector<Recording> recordings;
  std::vector<ProfileUnit> units;
  FoldedStacks folded;
  std::vector<std::optional<StreamedPprofSums>> pprof_sums;    // by file: a streamed read's
  std::vector<std::optional<StreamedTraceCalls>> trace_calls;  // by file: a streamed read's
  for (const std::string& path : paths) {
    // Each file in turn, streamed where one file's view would be: the
    // table and --folded keep its profiles or stacks; --pprof its stacks'
    // sums; the Chrome trace its calls, spilled to temporary files.
    std::optional<Recording> recording;
    std::optional<int> failed;
    if (table)
      failed = add_units_of(path, options, units, recording);
    else if (options.folded)
      failed = add_folded_of(path, options, *metric, folded, recording);
    else if (trace)
      failed = read_trace_of(path, options, *trace, recording, trace_calls.emplace_back());
    else if (!options.trace.pprof.empty())
      failed = read_pprof_of(path, options, recording, pprof_sums.emplace_back());
    else if (!(recording = read_recording_for_output(path, options.strict)))
      failed = 1;
    if (failed) return *failed;
    if (!recording->complete)
      std::fprintf(stderr, "gpuprof: warning: %s is incomplete (%s); reporting its complete events\n", path.c_str(),
                   recording->incomplete_reason.empty() ? "the recorder did not finish"
                                                        : recording->incomplete_reason.c_str());
    if (!table && !options.folded) recordings.push_back(std::move(*recording));
  }
  if (options.folded) {
    merge_alike_stacks(folded);  // recordings of one rank add up under one root
    if (Result<void> written = write_folded(folded, stdout); !written) {
      std::fprintf(stderr, "gpuprof: error: %s\n", written.error().c_str());
      return 1;
    }
    return 0;
  }
  if (trace) {
    // One process each: a system-wide recording's processes that did
    // anything, apart (a deque keeps the copies where the inputs point).
    std::deque<Recording> processes;
    std::vector<TraceInput> inputs;
    for (size_t i = 0; i < recordings.size(); i++) {
      if (!is_system_wide(recordings[i])) {
        inputs.push_back({&recordings[i], paths[i], trace_calls[i] ? &*trace_calls[i] : nullptr});
        continue;
      }
      for (const auto& [pid, activity] : process_activity(recordings[i])) {
        if (!activity.events && !activity.samples && !activity.launches) continue;
        processes.push_back(select_processes(recordings[i], {pid}));
        inputs.push_back({&processes.back(), paths[i]});
      }
    }
    return export_chrome_trace(inputs, paths.size(), options.trace);
  }
  if (!options.trace.pprof.empty()) {
    std::vector<PprofInput> inputs;
    for (size_t i = 0; i < recordings.size(); i++)
      inputs.push_back(pprof_input(recordings[i], paths[i], pprof_sums[i] ? &*pprof_sums[i] : nullptr));
    TraceExportOptions pprof = options.trace;
    pprof.raw_times = options.raw_times;
    return export_pprof(inputs, pprof);
  }
  if (by == SpreadKey::kRank) {
    if (auto unranked = units_without_rank(units); !unranked.empty()) {
      std::string named;
      for (const ProfileUnit* unit : unranked) named += (named.empty() ? "" : "; ") + unit_name(*unit);
      std::fprintf(stderr,
                   "gpuprof: error: --by rank: no job rank (no RANK in the environment when recorded, as "
                   "torchrun sets it) for %s; --by pid or --by file name each process\n",
                   named.c_str());
      return 2;
    }
  }
  std::string out;
  if (by) {
    const OpSpreads spreads = op_spread(units, *by);
    out = format_spread_table(spreads, options.by, options.row_limit);
    if (by == SpreadKey::kRank) out += format_group_calls(spreads, options.by, options.row_limit);
  } else {
    out = std::to_string(paths.size()) + " recordings, " + std::to_string(units.size()) + " processes, one table:\n";
    for (const ProfileUnit& unit : units)
      out += "  " + unit_name(unit) + (unit.rank ? ": " + job_rank_line(*unit.rank) : "") + "\n";
    const Profile merged = merge_profiles(units);
    TableOptions table;
    table.sort_by = *sort_key;
    table.row_limit = options.row_limit;
    out += merged.rows.empty() ? "No operator calls were recorded.\n" : format_op_table(merged, table);
    // Each recording was compensated with its own calibration: one line each
    // (format_compensation_note), then the merged counters' notes, which
    // leave the compensation line out for a profile without rows.
    for (const ProfileUnit& unit : units) {
      if (unit.profile.rows.empty()) continue;
      const std::string note = format_compensation_note(unit.profile);
      for (size_t at = 0, end; at < note.size(); at = end + 1) {
        end = note.find('\n', at);
        std::string_view line = std::string_view(note).substr(at, end - at);
        if (line.starts_with("gpuprof: ")) line.remove_prefix(9);
        out += "gpuprof: " + unit_name(unit) + ": " + std::string(line) + "\n";
      }
    }
    Profile counters = merged;
    counters.rows.clear();
    out += format_profile_notes(counters);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace gpuprof::cli
