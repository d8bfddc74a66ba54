#include "cli/trace_export.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <regex>

#include "output/chrome_trace.h"
#include "output/chrome_trace_several.h"
#include "output/pprof.h"
#include "output/speedscope.h"
#include "base/file_mode.h"
#include "base/output_file.h"
#include "record/recording.h"

namespace gpuprof::cli {

namespace {
// The option of an export format: the file OUT it writes.
CLI::Option* add_export_option(CLI::App& command, const char* name, std::string& out,
                               const char* help) {
  return command.add_option(name, out, help)->type_name("OUT");
}
}  // namespace

void add_trace_export_options(CLI::App& command, TraceExportOptions& options) {
  CLI::Option* trace = add_export_option(
      command, "--chrome-trace", options.output,
      "write a Chrome/Perfetto trace (JSON; gzipped when OUT ends in .gz; - for stdout): op calls, "
      "module calls (recordings with Python stacks), CPU samples, CUDA launches, GPU kernels with flow arrows, "
      "memory counters; see docs/chrome-trace.md");
  command.add_option("--time-range", options.time_range,
                     "with --chrome-trace: only what overlaps START:END, seconds since the recording "
                     "started (of several: since the earliest started; either side may be empty: 2.5:)")
      ->type_name("START:END")
      ->needs(trace);
  command.add_option("--mode", options.mode,
                     "permissions of the files written (octal; default 600: they hold command lines, paths "
                     "and code locations)")
      ->type_name("OCTAL")
      ->capture_default_str();
  command.add_option("--ops", options.ops,
                     "with --chrome-trace: only the op calls whose name matches PATTERN (a regular "
                     "expression, searched), the calls nested in them and what they launched")
      ->type_name("PATTERN")
      ->needs(trace);
}

void add_speedscope_option(CLI::App& command, TraceExportOptions& options) {
  add_export_option(command, "--speedscope", options.speedscope,
                    "write the recording in speedscope's own format (JSON; gzipped when OUT ends in .gz; - "
                    "for stdout): per thread its op calls under their Python frames, and its CPU samples; "
                    "one frame per op; see docs/speedscope.md");
}

void add_pprof_option(CLI::App& command, TraceExportOptions& options) {
  add_export_option(command, "--pprof", options.pprof,
                    "write a pprof profile (profile.proto; gzipped when OUT ends in .gz, as pprof, Pyroscope "
                    "and Parca expect; - for stdout): calls and self CPU of op paths under their Python "
                    "frames, CPU samples, GPU time; pid, comm and hostname labels; see docs/pprof.md");
}

std::optional<ChromeTraceOptions> chrome_trace_options(const TraceExportOptions& options) {
  ChromeTraceOptions trace;
  if (!options.time_range.empty()) {
    const auto range = parse_trace_time_range(options.time_range);
    if (!range) {
      std::fprintf(stderr, "gpuprof: error: %s\n", range.error().c_str());
      return std::nullopt;
    }
    trace.range = *range;
  }
  if (!options.ops.empty()) {
    try {
      trace.ops.emplace(options.ops, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "gpuprof: error: --ops %s: not a regular expression (%s)\n", options.ops.c_str(),
                   e.what());
      return std::nullopt;
    }
    trace.ops_pattern = options.ops;
  }
  return trace;
}

namespace {

// The output file of an export, opened with --mode's permissions; null
// after saying why on stderr (*exit_code set).
std::unique_ptr<OutputFile> open_export(const std::string& path, const TraceExportOptions& options, int* exit_code) {
  const auto mode = parse_file_mode(options.mode);
  if (!mode) {
    std::fprintf(stderr, "gpuprof: error: %s\n", mode.error().c_str());
    *exit_code = 2;
    return nullptr;
  }
  auto file = OutputFile::open(path, *mode);
  if (!file) {
    std::fprintf(stderr, "gpuprof: error: %s\n", file.error().c_str());
    *exit_code = 1;
    return nullptr;
  }
  return std::move(file).value();
}

// ", 12.3 kB" or ", 4.5 MB": what the file takes on disk; "" for stdout.
std::string size_on_disk(const OutputFile& file) {
  const uint64_t bytes = file.bytes_on_disk();
  if (!bytes) return "";
  char text[32];
  std::snprintf(text, sizeof text, bytes < 1'000'000 ? ", %.1f kB" : ", %.1f MB",
                bytes < 1'000'000 ? bytes / 1e3 : bytes / 1e6);
  return text;
}

// Seconds from the recording's start to its end (to its last event or
// sample when it never finished: gpuprof was killed).
double recorded_seconds(const Recording& recording) {
  uint64_t end = recording.clock.end_monotonic_ns;
  if (!end) {
    for (const auto& e : recording.events) end = std::max<uint64_t>(end, e.ts_ns);
    for (const auto& s : recording.samples) end = std::max(end, s.ts_ns);
  }
  const uint64_t start = recording.clock.start_monotonic_ns;
  return end > start ? (end - start) / 1e9 : 0.0;
}


// Writes the trace through write_trace into options.output and says what
// it wrote (from `from`); the warning when --ops or --time-range kept no
// call says how long the recordings run (`span`: "a.gpuprof spans 0 to
// 1.234 s"). Returns the process exit code.
int write_trace_file(const TraceExportOptions& options, const std::string& from,
                     const std::function<std::optional<ChromeTraceStats>(
                         const std::function<void(std::string_view)>& write)>& write_trace,
                     const std::function<std::string()>& span) {
  int exit_code = 0;
  auto file = open_export(options.output, options, &exit_code);
  if (!file) return exit_code;
  const std::optional<ChromeTraceStats> written = write_trace([&](std::string_view piece) { file->write(piece); });
  if (const auto closed = file->close(); !closed) {
    std::fprintf(stderr, "gpuprof: error: %s\n", closed.error().c_str());
    return 1;
  }
  if (!written) return 1;  // why: said by write_trace
  const ChromeTraceStats& stats = *written;
  std::fprintf(stderr,
               "gpuprof: wrote %s from %s: %llu trace events (%llu op calls, %llu module calls, %llu samples, "
               "%llu GPU activities, %llu flows, %llu counter values)",
               options.output == "-" ? "the trace" : options.output.c_str(), from.c_str(),
               static_cast<unsigned long long>(stats.events), static_cast<unsigned long long>(stats.op_calls),
               static_cast<unsigned long long>(stats.module_calls),
               static_cast<unsigned long long>(stats.samples), static_cast<unsigned long long>(stats.gpu_activities),
               static_cast<unsigned long long>(stats.flows), static_cast<unsigned long long>(stats.counters));
  std::fprintf(stderr, "%s\n", size_on_disk(*file).c_str());
  if (stats.op_calls == 0 && (!options.ops.empty() || !options.time_range.empty())) {
    std::string cut = options.ops.empty() ? "" : "--ops " + options.ops;
    if (!options.time_range.empty()) cut += (cut.empty() ? "" : " and ") + ("--time-range " + options.time_range);
    std::fprintf(stderr, "gpuprof: warning: no op call matched %s; %s\n", cut.c_str(), span().c_str());
  }
  return 0;
}

}  // namespace

int export_chrome_trace(const Recording& recording, const std::string& input_path,
                        const TraceExportOptions& options, const StreamedTraceCalls* streamed) {
  const std::optional<ChromeTraceOptions> trace = chrome_trace_options(options);
  if (!trace) return 2;
  return write_trace_file(
      options, input_path,
      [&](const std::function<void(std::string_view)>& write) -> std::optional<ChromeTraceStats> {
        // A streamed read's calls (streamed_chrome_trace.h), or the recording's events.
        return streamed ? write_chrome_trace(recording, *trace, *streamed, write)
                        : write_chrome_trace(recording, *trace, write);
      },
      // What the range can be measured against: the recording's own length.
      [&] {
        char text[64];
        std::snprintf(text, sizeof text, " spans 0 to %.3f s", recorded_seconds(recording));
        return input_path + text;
      });
}

int export_chrome_trace(const std::vector<TraceInput>& inputs, size_t files, const TraceExportOptions& options) {
  const std::optional<ChromeTraceOptions> trace = chrome_trace_options(options);
  if (!trace) return 2;
  return write_trace_file(
      options, std::to_string(files) + " recordings",
      [&](const std::function<void(std::string_view)>& write) {
        auto stats = write_chrome_trace_of_several(inputs, *trace, write);
        if (!stats) {
          std::fprintf(stderr, "gpuprof: error: %s\n", stats.error().c_str());
          return std::optional<ChromeTraceStats>();
        }
        return std::optional<ChromeTraceStats>(*stats);
      },
      // The range is in seconds since the earliest start: each recording's
      // span on that scale.
      [&] {
        uint64_t zero = UINT64_MAX;
        for (const TraceInput& input : inputs) zero = std::min(zero, input.recording->clock.start_realtime_ns);
        std::string spans;
        for (const TraceInput& input : inputs) {
          const double from = (input.recording->clock.start_realtime_ns - zero) / 1e9;
          char text[96];
          std::snprintf(text, sizeof text, " spans %.3f to %.3f s", from, from + recorded_seconds(*input.recording));
          spans += (spans.empty() ? "" : "; ") + input.file + text;
        }
        return spans;
      });
}

int export_speedscope(const Recording& recording, const std::string& input_path, const TraceExportOptions& options,
                      const StreamedTraceCalls* streamed) {
  int exit_code = 0;
  auto file = open_export(options.speedscope, options, &exit_code);
  if (!file) return exit_code;
  const auto write = [&](std::string_view piece) { file->write(piece); };
  const SpeedscopeStats stats =
      streamed ? write_speedscope(recording, *streamed, write) : write_speedscope(recording, write);
  if (const auto closed = file->close(); !closed) {
    std::fprintf(stderr, "gpuprof: error: %s\n", closed.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "gpuprof: wrote %s from %s: %llu profiles (%llu op calls, %llu samples), %llu frames%s\n",
               options.speedscope == "-" ? "the speedscope profile" : options.speedscope.c_str(), input_path.c_str(),
               static_cast<unsigned long long>(stats.profiles), static_cast<unsigned long long>(stats.op_calls),
               static_cast<unsigned long long>(stats.samples), static_cast<unsigned long long>(stats.frames),
               size_on_disk(*file).c_str());
  if (stats.profiles == 0)
    std::fprintf(stderr, "gpuprof: warning: %s has no op calls or samples: the profile is empty\n",
                 input_path.c_str());
  return 0;
}

namespace {

// Writes the profile that make() builds into options.pprof and says what it
// wrote (from `from`). Returns the process exit code.
int write_pprof_file(const TraceExportOptions& options, const std::string& from,
                     const std::function<PprofProfile()>& make) {
  int exit_code = 0;
  auto file = open_export(options.pprof, options, &exit_code);
  if (!file) return exit_code;
  const PprofProfile profile = make();
  file->write(profile.data);
  if (const auto closed = file->close(); !closed) {
    std::fprintf(stderr, "gpuprof: error: %s\n", closed.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "gpuprof: wrote %s from %s: %llu samples of %llu sample types, %llu functions%s\n",
               options.pprof == "-" ? "the pprof profile" : options.pprof.c_str(), from.c_str(),
               static_cast<unsigned long long>(profile.stats.samples),
               static_cast<unsigned long long>(profile.stats.sample_types),
               static_cast<unsigned long long>(profile.stats.functions), size_on_disk(*file).c_str());
  if (profile.stats.samples == 0)
    std::fprintf(stderr, "gpuprof: warning: %s has no op calls or samples: the profile is empty\n", from.c_str());
  return 0;
}

}  // namespace

PprofInput pprof_input(const Recording& recording, const std::string& input_path, StreamedPprofSums* streamed) {
  PprofInput input{.recording = &recording, .file = input_path};
  if (streamed && streamed->by_process)
    input.processes = &*streamed->by_process;
  else if (streamed)
    input.sums = &streamed->sums;
  return input;
}

int export_pprof(const std::vector<PprofInput>& inputs, const TraceExportOptions& options) {
  const std::string from = inputs.size() == 1 ? inputs.front().file : std::to_string(inputs.size()) + " recordings";
  return write_pprof_file(options, from, [&] { return pprof_profile(inputs, options.raw_times); });
}

}  // namespace gpuprof::cli
