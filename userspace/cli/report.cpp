#include "cli/report.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <variant>

#include "analyze/aggregator.h"
#include "analyze/module_tree.h"
#include "output/module_table.h"
#include "record/cupti_shim_state.h"
#include "cli/option_checks.h"
#include "cli/report_inputs.h"
#include "cli/report_many.h"
#include "cli/report_reads.h"
#include "output/folded_stacks.h"
#include "output/gpu_time_report.h"
#include "analyze/gpu_time.h"
#include "output/gpu_kernel_table.h"
#include "output/job_rank_line.h"
#include "output/launch_table.h"
#include "output/pprof.h"
#include "analyze/process_filter.h"
#include "analyze/process_tables.h"
#include "record/frames_not_read.h"
#include "record/record_file.h"

namespace gpuprof::cli {
namespace {

// CPU samples the ring buffer had no room for: how many, and what share of
// those taken, for the table's notes and --folded --metric samples alike.
std::string samples_lost_note(const Recording& recording) {
  const uint64_t lost = recording.stats.samples_lost;
  if (!lost) return "";
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * lost / (lost + recording.samples.size()));
  return "gpuprof: " + std::to_string(lost) + " CPU samples lost (" + share + " of the " +
         std::to_string(lost + recording.samples.size()) +
         " taken; sample ring buffer full): sample counts are short by that much; try a lower -F\n";
}

std::string peak_line(const char* what, const MemoryPeakInfo& peak) {
  char at[64];
  std::snprintf(at, sizeof(at), "%.3f s", peak.at_s);
  return std::string(what) + format_memory(peak.bytes) + " at " + at + " after the start, " +
         (peak.op.empty() ? "outside any op" : "in " + peak.op) + "\n";
}

// What the table cannot show about shapes and memory, and what was lost.
std::string format_recording_notes(const Recording& recording, const Profile& profile,
                                   bool grouped) {
  std::string out;
  const RecordStats& stats = recording.stats;
  if (recording.options.memory) {
    if (profile.cpu_memory_peak.seen)
      out += peak_line("CPU tensor memory peak (net of what the recording saw allocated and freed): ",
                       profile.cpu_memory_peak);
    if (profile.cuda_memory_peak.seen)
      out += peak_line(("CUDA memory peak (device " + std::to_string(profile.cuda_memory_peak.device_index) +
                        ", allocated): ").c_str(),
                       profile.cuda_memory_peak);
    if (profile.memory_unmatched_frees)
      out += "Not counted: " + std::to_string(profile.memory_unmatched_frees) +
             " releases of tensors allocated before the recording started (torch.profiler "
             "does the same)\n";
    if (stats.mem_events_lost)
      out += "WARNING: " + std::to_string(stats.mem_events_lost) +
             " memory events lost (ring buffer full): memory columns are incomplete\n";
  }
  for (const std::string& problem : stats.problems) out += "gpuprof: warning: " + problem + "\n";
  if (stats.symbols_unresolved)
    out += "gpuprof: " + std::to_string(stats.symbols_unresolved) +
           " CPU samples or CUDA launches are in code without a symbol (FILE+0x...: a stripped library, "
           "install its debug symbols; [unknown]: memory no file maps, such as the heap)\n";
  out += samples_lost_note(recording);
  if (recording.options.shapes && grouped) {
    if (!stats.tensor_layout.empty()) out += stats.tensor_layout + "\n";
    if (stats.shapes_unknown)
      out += std::to_string(stats.shapes_unknown) +
             " tensor arguments could not be read or verified: they print as ?\n";
  }
  return out;
}

// report --folded: the stacks on stdout, nothing else there; the notes the
// table would print under it go to stderr.
int print_folded(const Recording& recording, const FoldedStacks& folded, FoldedMetric metric, bool raw_times) {
  if (Result<void> written = write_folded(folded, stdout); !written) {
    std::fprintf(stderr, "gpuprof: error: %s\n", written.error().c_str());
    return 1;
  }
  // The notes as the table prints them (without rows: no compensation line
  // there; it comes below, for self times only).
  Profile as_table;
  as_table.counters = folded.counters;
  as_table.events_lost = recording.stats.events_lost;
  std::string notes = format_profile_notes(as_table);
  if (metric == FoldedMetric::kSelfCpuTime && op_events_read(recording) != 0) {
    if (const ProbeCosts* costs = compensation_costs(recording, raw_times)) as_table.compensation = *costs;
    as_table.raw_times_asked = raw_times;
    notes = format_compensation_note(as_table) + notes;
  }
  if (folded.gpu_ns_outside_ops)
    notes += "gpuprof: " + std::to_string(folded.gpu_ns_outside_ops / 1000) +
             " us of GPU time launched outside any op (or before the recording) are in no stack\n";
  // What a stack's value is, in the notes.
  const char* value = metric == FoldedMetric::kSelfCudaTime ? "GPU time" : "self time";
  if (folded.stacks_below_1us)
    notes += "gpuprof: " + std::to_string(folded.stacks_below_1us) + " stacks left out: their calls add up to under 1 us of " +
             value + "\n";
  if (metric == FoldedMetric::kSamples) notes += samples_lost_note(recording);
  if (folded.stacks.empty() && metric == FoldedMetric::kSamples)
    notes += "gpuprof: no CPU samples were taken: the folded output is empty\n";
  else if (folded.stacks.empty())
    notes += "gpuprof: no stack has 1 us of " + std::string(value) + " or more (" +
             std::to_string(op_events_read(recording)) + " events): the folded output is empty\n";
  std::fwrite(notes.data(), 1, notes.size(), stderr);
  return 0;
}

}  // namespace

void add_table_options(CLI::App& command, ReportOptions& options) {
  std::string keys;
  for (std::string_view key : valid_sort_key_names()) keys += (keys.empty() ? "" : ", ") + std::string(key);
  command.add_option("--sort-by", options.sort_by, "sort key, as in key_averages().table(sort_by=...): " + keys)
      ->capture_default_str();
  command.add_option("--row-limit", options.row_limit, "rows to print (-1: all)")->capture_default_str();
  command.add_flag("--raw-times", options.raw_times,
                   "op times as the probes stamped them, the probes' own time included (default: that time, "
                   "calibrated when recording, is taken out; docs/overhead.md)");
  command.add_flag("--group-by-input-shape", options.group_by_input_shape,
                   "one row per op and input shapes, as key_averages(group_by_input_shape=True) "
                   "(needs a recording made with --record-shapes)");
  command.add_option("--group-by-stack-n", options.group_by_stack_n,
                     "one row per op and the top N Python frames of its calls, with a Source Location "
                     "column, as key_averages(group_by_stack_n=N) (needs a recording made with --with-stack)")
      ->check(CLI::Range(1, 4096));
}

void add_report_command(CLI::App& app, ReportOptions& options) {
  CLI::App* report = app.add_subcommand("report", "Print the operator table of a recording, or its folded stacks (--folded)");
  report->add_option("file", options.input_paths,
                     "record file written by gpuprof record (default: gpuprof.data); several (or a directory of "
                     "them): one table of all, --by, --folded (each under its rank or file), --pprof or "
                     "--chrome-trace (a process track per rank or file, aligned on wall-clock time); see "
                     "docs/fleet.md");
  report->add_option("--by", options.by,
                     "per op, its Self CPU in each file, process (pid), host or job rank (RANK of torchrun's "
                     "workers) side by side: min, median, max and the slowest; one FILE or several")
      ->type_name("file|pid|host|rank");
  add_table_options(*report, options);
  CLI::Option* folded = report->add_flag(
      "--folded", options.folded,
      "print folded stacks (outermost;...;op value) for flamegraph.pl or speedscope instead of the table; "
      "see docs/folded.md");
  report->add_option("--metric", options.metric,
                     "value of a folded stack: self_cpu_time (self time of its ops, integer us); samples "
                     "(CPU samples of a recording made with -F HZ); self_cuda_time (GPU time of the "
                     "kernels each op launched itself, integer us; needs the CUPTI shim's records)")
      ->capture_default_str()
      ->needs(folded);
  CLI::Option* launches = report->add_flag(
      "--launches", options.launches,
      "print the CUDA kernel launches per op (op, kernel, launch API, count) instead of the table; "
      "--row-limit applies; see docs/cuda.md");
  // The table's options mean nothing for stacks: refuse rather than ignore.
  for (const char* table_only : {"--sort-by", "--row-limit", "--group-by-input-shape", "--group-by-stack-n"})
    folded->excludes(report->get_option(table_only));
  CLI::Option* kernels = report->add_flag(
      "--kernels", options.kernels,
      "print the GPU time per op and kernel (from the CUPTI shim) instead of the table; --row-limit "
      "applies; see docs/cuda.md");
  for (const char* table_only : {"--sort-by", "--group-by-input-shape", "--group-by-stack-n"}) {
    launches->excludes(report->get_option(table_only));
    kernels->excludes(report->get_option(table_only));
  }
  launches->excludes(folded);
  kernels->excludes(folded);
  kernels->excludes(launches);
  CLI::Option* gpu = report->add_flag(
      "--gpu", options.gpu,
      "print where each GPU's time went instead of the table: busy and idle, idle split into host wait "
      "(with what the launching thread ran) and queued, compute/communication/memcpy/memset time and "
      "overlap, launch-to-start queue delay, streams, kernels by GPU time; needs the CUPTI shim's "
      "records; --row-limit applies; see docs/gpu-time.md");
  for (const char* table_only : {"--sort-by", "--group-by-input-shape", "--group-by-stack-n"})
    gpu->excludes(report->get_option(table_only));
  for (CLI::Option* other : {folded, launches, kernels}) gpu->excludes(other);
  CLI::Option* modules = report->add_flag(
      "--modules", options.modules,
      "print the model's modules as a tree with the op time and calls under each (torchprof's layer "
      "table) instead of the op table; needs a recording made with --with-modules (or --with-stack); "
      "see docs/modules.md");
  report->add_flag("--show-events", options.show_events, "--modules: each module's own ops under it")->needs(modules);
  report->add_option("--module-paths", options.module_paths,
                     "--modules: only these modules and what is under them, as dotted paths from the model "
                     "(ResNet.layer1,ResNet.fc), or the nodes [no module], [backward], ... by name (backward)")
      ->delimiter(',')
      ->needs(modules);
  report->add_option("--depth", options.depth, "--modules: modules down to this depth (the model: 0)")
      ->check(CLI::Range(0, 1000))
      ->needs(modules);
  for (const char* table_only : {"--sort-by", "--row-limit", "--group-by-input-shape", "--group-by-stack-n"})
    modules->excludes(report->get_option(table_only));
  for (CLI::Option* other : {folded, launches, kernels, gpu}) modules->excludes(other);
  report->add_option("--pid", options.pids,
                     "system-wide recordings (record -a): only this process (repeatable)");
  report->add_option("--comm", options.comms,
                     "system-wide recordings (record -a): only processes with this name, as "
                     "/proc/PID/comm gives it, e.g. python3 (repeatable)");
  report->add_flag("--strict", options.strict,
                   "refuse a recording with a corrupt chunk (exit 1) instead of skipping the chunk, saying on "
                   "stderr what it held, and reporting the rest (exit 0); see docs/report.md");
  add_trace_export_options(*report, options.trace);
  CLI::Option* trace = report->get_option("--chrome-trace");
  add_speedscope_option(*report, options.trace);
  CLI::Option* speedscope = report->get_option("--speedscope");
  add_pprof_option(*report, options.trace);
  CLI::Option* pprof = report->get_option("--pprof");
  // --mode sets the permissions of the one file report writes.
  report->parse_complete_callback([report] {
    if (report->count("--mode") && !report->count("--chrome-trace") && !report->count("--speedscope") &&
        !report->count("--pprof"))
      throw CLI::ValidationError("--mode",
                                 "sets the permissions of --chrome-trace's, --speedscope's or --pprof's file: give one");
  });
  for (CLI::Option* file : {trace, speedscope, pprof}) {
    for (CLI::Option* other : {folded, launches, kernels, gpu, modules}) file->excludes(other);
    for (const char* table_only : {"--sort-by", "--row-limit", "--group-by-input-shape", "--group-by-stack-n"})
      file->excludes(report->get_option(table_only));
  }
  speedscope->excludes(trace);
  pprof->excludes(trace);
  pprof->excludes(speedscope);
  report->footer(
      "Examples:\n"
      "  gpuprof report                                  # ./gpuprof.data\n"
      "  gpuprof report run.gpuprof --sort-by self_cpu_time_total --row-limit 10\n"
      "  gpuprof report run.gpuprof --group-by-input-shape --sort-by cpu_memory_usage\n"
      "  gpuprof report run.gpuprof --group-by-stack-n 5 --sort-by self_cpu_time_total\n"
      "  gpuprof report run.gpuprof --folded > run.folded\n"
      "  flamegraph.pl run.folded > run.svg\n"
      "  gpuprof report run.gpuprof --launches --row-limit 20\n"
      "  gpuprof report run.gpuprof --kernels\n"
      "  gpuprof report run.gpuprof --gpu                 # busy, idle and what it waited for\n"
      "  gpuprof report run.gpuprof --modules --show-events  # the layer table (record --with-modules)\n"
      "  gpuprof report run.gpuprof --strict                       # exit 1 on a corrupt chunk\n"
      "  gpuprof report run.gpuprof --chrome-trace run.json.gz     # open in ui.perfetto.dev\n"
      "  gpuprof report run.gpuprof --chrome-trace c.json --ops conv --time-range 1:2.5\n"
      "  gpuprof report rank0.gpuprof rank1.gpuprof --chrome-trace job.json.gz  # a track per rank, aligned\n"
      "  gpuprof report run.gpuprof --speedscope run.speedscope.json  # open in speedscope.app\n"
      "  gpuprof report run.gpuprof --pprof run.pb.gz               # go tool pprof, Pyroscope, Parca\n"
      "  gpuprof report all.gpuprof --pid 4242                     # one process of a record -a file\n"
      "  gpuprof report all.gpuprof --comm python3 --folded --metric samples\n");
}

// --modules: the layer table (docs/modules.md).
// streamed: the tree of a streamed read (nullptr: built here, from the
// recording read whole).
static int print_module_table(const Recording& recording, const ModuleTree* streamed,
                              const ReportOptions& options) {
  if (!recording.options.with_stack) {
    std::fprintf(stderr,
                 "gpuprof: error: --modules: %s has no Python stacks of op calls, which say what module each "
                 "op ran in: record with --with-modules\n",
                 options.input_path.c_str());
    return 2;
  }
  if (is_system_wide(recording)) {
    size_t with_ops = 0;
    for (const auto& [pid, activity] : process_activity(recording)) with_ops += activity.events > 0;
    if (with_ops > 1) {
      std::fprintf(stderr,
                   "gpuprof: error: --modules: %s is a system-wide recording with ops of %zu processes: choose "
                   "one with --pid PID (each runs its own model; torch's module labels repeat across "
                   "processes)\n",
                   options.input_path.c_str(), with_ops);
      return 2;
    }
  }
  const ModuleTree tree = streamed ? *streamed : build_module_tree(recording, options.raw_times);
  // CLI11 reads "[backward]" as a list and hands over "backward": the
  // synthetic nodes are found by their names without brackets too.
  std::vector<std::string> module_paths = options.module_paths;
  for (std::string& path : module_paths)
    for (size_t top : tree.tops)
      if (tree.nodes[top].name == "[" + path + "]") path = tree.nodes[top].name;
  if (auto unknown = unknown_module_paths(tree, module_paths); !unknown.empty()) {
    std::string known;
    for (size_t i = 0; i < tree.nodes.size() && i < 40; i++) known += (i ? ", " : "") + tree.path(i);
    std::fprintf(stderr, "gpuprof: error: --module-paths: %s has no module %s; it has: %s%s\n",
                 options.input_path.c_str(), unknown.front().c_str(), known.c_str(),
                 tree.nodes.size() > 40 ? ", ..." : "");
    return 2;
  }
  ModuleTableOptions table;
  table.show_events = options.show_events;
  table.paths = module_paths;
  table.depth = options.depth;
  std::string text = tree.nodes.empty() ? "No operator calls were recorded.\n" : format_module_table(tree, table);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::string notes;
  if (recording.module_names.empty() && !tree.nodes.empty())
    notes += "gpuprof: modules are named by torch's instance labels (Conv2d_18): the recording holds no "
             "attribute names (record --with-modules reads them)\n";
  if (tree.ops_without_stack)
    notes += "gpuprof: " + std::to_string(tree.ops_without_stack) +
             " op calls of Python threads had no Python stack read: they are under [stack not read]\n";
  std::fwrite(notes.data(), 1, notes.size(), stderr);
  return 0;
}

std::string format_table_report(const Recording& recording, const Profile& profile, const ReportOptions& options,
                                SortKey sort_key, const std::string& input_path) {
  TableOptions table;
  table.sort_by = sort_key;
  table.row_limit = options.row_limit;
  std::string text = format_op_table(profile, table);
  if (profile.rows.empty() && !recording.options.ops)
    text = "No operator calls were traced (recorded with --no-ops): " +
           std::to_string(recording.samples.size()) +
           " CPU samples. Read them with: gpuprof report " + input_path +
           " --folded --metric samples\n";
  else if (profile.rows.empty())
    text = "No operator calls were recorded (" + std::to_string(op_events_read(recording)) +
           (op_events_read(recording) == 1 ? " event" : " events") + ").\n";
  // A rank of a distributed job says so above its table.
  if (const JobRank* rank = job_rank_of(recording.job_ranks, recording.process.pid))
    text = job_rank_line(*rank) + "\n" + text;
  std::string notes = format_profile_notes(profile) +
                      format_recording_notes(recording, profile, options.group_by_input_shape);
  if (recording.cuda_runtime)
    notes += std::to_string(launches_read(recording)) + " CUDA kernel launches: gpuprof report " +
             input_path + " --launches lists them per op\n";
  if (recording.cupti_shim) {
    notes += std::to_string(gpu_activities_read(recording)) + " GPU activities from CUPTI: gpuprof report " +
             input_path + " --kernels gives the GPU time per op and kernel\n";
    if (recording.cupti_shim->state != kCuptiShimTracing)
      notes += std::string("gpuprof: no CUDA time columns: the target's CUPTI shim ") +
               cupti_shim_state_text(recording.cupti_shim->state) + "\n";
  }
  return text + notes;
}

// "4242 python3, 4243 python3, ..." (the most active first, at most 20).
std::string list_processes(const Recording& recording, std::vector<std::pair<uint32_t, ProcessActivity>> activity) {
  std::stable_sort(activity.begin(), activity.end(), [](const auto& a, const auto& b) {
    return a.second.events + a.second.samples > b.second.events + b.second.samples;
  });
  std::map<uint32_t, std::string> comm;
  for (const ProcessInfo& p : recording.processes) comm[static_cast<uint32_t>(p.pid)] = p.comm;
  std::string out;
  size_t listed = 0;
  for (const auto& [pid, a] : activity) {
    if (listed++ == 20) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(pid) + " " + comm[pid];
  }
  return out.empty() ? "no process" : out;
}

// A system-wide recording (record -a): a section per process that ran ops
// (its pid, command line, libtorch and op table), the busiest first, then
// the processes that were only sampled, then the recording's notes. tables:
// process_tables() of the recording, or the streamed read's.
std::string format_system_report(const Recording& recording, const ProcessTables& tables,
                                 const ReportOptions& options, SortKey sort_key, const std::string& input_path) {
  auto activity = tables.activity;
  std::stable_sort(activity.begin(), activity.end(),
                   [](const auto& a, const auto& b) { return a.second.events > b.second.events; });
  std::map<uint32_t, const ProcessInfo*> info;
  for (const ProcessInfo& p : recording.processes) info[static_cast<uint32_t>(p.pid)] = &p;
  TableOptions table;
  table.sort_by = sort_key;
  table.row_limit = options.row_limit;
  std::string out;
  size_t sections = 0;
  std::vector<std::pair<uint32_t, ProcessActivity>> sampled_only;
  for (const auto& [pid, a] : activity) {
    if (a.events == 0) {
      if (a.samples) sampled_only.push_back({pid, a});
      continue;
    }
    const Profile& profile = tables.profiles.at(pid);
    const ProcessInfo* p = info.count(pid) ? info[pid] : nullptr;
    out += std::string(sections++ ? "\n" : "") + "== Process " + std::to_string(pid) + " (" +
           (p ? p->comm : "?") + "): " + (p && !p->cmdline.empty() ? p->cmdline : "[no command line]") + "\n";
    if (const JobRank* rank = job_rank_of(recording.job_ranks, static_cast<int32_t>(pid)))
      out += "   " + job_rank_line(*rank) + "\n";
    if (p && !p->libtorch_path.empty()) out += "   libtorch_cpu: " + p->libtorch_path + "\n";
    out += "   " + std::to_string(a.events) + " op events" +
           (recording.options.sample_hz ? ", " + std::to_string(a.samples) + " CPU samples" : "") +
           (a.launches ? ", " + std::to_string(a.launches) + " CUDA launches" : "") + "\n";
    out += profile.rows.empty() ? "No operator calls were recorded.\n" : format_op_table(profile, table);
    out += format_profile_notes(profile);
  }
  if (sections == 0)
    out += recording.options.ops ? "No PyTorch process ran an operator during the recording.\n"
                                 : "No operator calls were traced (recorded with --no-ops).\n";
  if (!sampled_only.empty()) {
    std::stable_sort(sampled_only.begin(), sampled_only.end(),
                     [](const auto& a, const auto& b) { return a.second.samples > b.second.samples; });
    out += "\nProcesses with CPU samples only (" + std::to_string(sampled_only.size()) + "): ";
    for (size_t i = 0; i < sampled_only.size() && i < 10; i++) {
      const uint32_t pid = sampled_only[i].first;
      out += std::string(i ? ", " : "") + std::to_string(pid) + " " + (info.count(pid) ? info[pid]->comm : "?") +
             " (" + std::to_string(sampled_only[i].second.samples) + ")";
    }
    if (sampled_only.size() > 10) out += ", ...";
    out += "\nRead every process's samples with: gpuprof report " + input_path + " --folded --metric samples\n";
  }
  Profile whole;  // the recording's own notes need no per-op figures
  out += format_recording_notes(recording, whole, false);
  if (recording.stats.events_lost)
    out += "WARNING: " + std::to_string(recording.stats.events_lost) +
           " events lost (ring buffer full): try a larger --ring-buffer\n";
  return out;
}

int run_report(const ReportOptions& given) {
  // A streamed read's memory is what it holds at once (docs/report.md,
  // "Memory"), and its peak RSS should say so. glibc raises its mmap
  // threshold each time a large block is freed, after which large
  // buffers (a growing hash table, a vector that doubles) come from the
  // heap and their freed pages stay: the peak then grew by 4 to 8 MiB from a
  // 1 s to a 4 s recording, varying from run to run. A fixed threshold keeps
  // every buffer of 128 KiB or more in its own mapping, returned when freed
  // (wall time unchanged on the bench's recordings, CPU up to 1.1 times).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ReportOptions options = given;
  auto inputs = expand_report_inputs(options.input_paths);
  if (!inputs) {
    std::fprintf(stderr, "gpuprof: error: %s\n", inputs.error().c_str());
    return 1;
  }
  options.input_paths = std::move(*inputs);
  if (!options.input_paths.empty()) options.input_path = options.input_paths.front();
  if (options.input_paths.size() > 1 || !options.by.empty()) return run_report_many(options);
  std::optional<FoldedMetric> metric;
  if (options.folded) {
    metric = cli::parse_option_value(parse_folded_metric, options.metric);
    if (!metric) return 2;
  }
  auto sort_key = cli::parse_option_value(parse_sort_key, options.sort_by);
  if (!sort_key) return 2;
  // The plain table streams the events (docs/report.md, "Memory"), a
  // system-wide recording's too, all or some of its processes.
  const bool filtered = !options.pids.empty() || !options.comms.empty();
  const bool plain_table = streaming_allowed() && !options.folded && options.trace.output.empty() &&
                           options.trace.speedscope.empty() && options.trace.pprof.empty() && !options.gpu &&
                           !options.launches && !options.kernels && !options.modules;
  const bool whole_only = filtered || !streaming_allowed();
  // So do --folded's self times and samples (record-file.md, "Streaming
  // reads"), a system-wide recording's too, all or some of its processes.
  const ProcessChoice choice{.pids = options.pids, .comms = options.comms};
  const bool streamed_folded = streaming_allowed() && metric.has_value();
  std::optional<Recording> recording;
  std::optional<Profile> streamed_profile;
  std::optional<ProcessTables> streamed_tables;
  std::optional<FoldedStacks> streamed_stacks;
  // And the Chrome trace, --ops and --time-range too (streamed_chrome_trace.h),
  // whose options are checked before anything is read.
  std::optional<ChromeTraceOptions> trace_options;
  if (!options.trace.output.empty() && !(trace_options = chrome_trace_options(options.trace))) return 2;
  const bool streamed_trace = streaming_allowed() && trace_options.has_value();
  // And --speedscope, from the same replay of each thread's calls (speedscope.h).
  const bool streamed_speedscope = streaming_allowed() && !options.trace.speedscope.empty();
  std::optional<StreamedTraceCalls> streamed_calls;
  // And --pprof (streamed_metric_sums.h), as --folded.
  const bool streamed_pprof = streaming_allowed() && !options.trace.pprof.empty();
  std::optional<StreamedPprofSums> streamed_sums;
  // And --modules (streamed_module_tree.h).
  const bool streamed_module_table = streaming_allowed() && options.modules;
  std::optional<ModuleTree> streamed_modules;
  // And --kernels (streamed_kernel_table.h).
  const bool streamed_kernel_table = !whole_only && options.kernels;
  std::optional<GpuKernelSummary> streamed_kernels;
  // And --launches (streamed_launch_table.h).
  const bool streamed_launch_table = streaming_allowed() && options.launches;
  std::optional<LaunchSummary> streamed_launches;
  // And --gpu (read_for_gpu_time): a recording without GPU times is only
  // its head.
  std::optional<std::vector<GpuDeviceTime>> streamed_gpu_time;
  bool gpu_head_only = false;
  std::optional<int> failed;
  if (streamed_launch_table)
    failed = take_read(read_for_launches(options.input_path, options.strict, choice), &StreamedLaunches::summary,
                       recording, streamed_launches);
  else if (streamed_kernel_table)
    failed = take_read(read_for_kernels(options.input_path, options.strict), &StreamedKernels::summary, recording,
                       streamed_kernels);
  else if (streamed_module_table)
    failed = take_read(read_for_modules(options.input_path, options.strict, options.raw_times, choice),
                       &StreamedModules::tree, recording, streamed_modules);
  else if (streamed_pprof)
    failed = take_read(read_for_pprof(options.input_path, options.strict, options.raw_times, choice),
                       &StreamedPprof::sums, recording, streamed_sums);
  else if (streamed_trace)
    failed = take_read(read_for_trace(options.input_path, options.strict, {.ops = trace_options->ops, .choice = choice}),
                       &StreamedTrace::calls, recording, streamed_calls);
  else if (streamed_speedscope)
    failed = take_read(read_for_trace(options.input_path, options.strict, {.calls_only = true, .choice = choice}),
                       &StreamedTrace::calls, recording, streamed_calls);
  else if (streamed_folded)
    failed = take_read(read_for_folded(options.input_path, options.strict, *metric, options.raw_times, choice),
                       &StreamedFolded::folded, recording, streamed_stacks);
  else if (plain_table) {
    auto read = read_for_table(options.input_path, options.strict, options.raw_times, filtered,
                               TableGrouping{.by_input_shape = options.group_by_input_shape,
                                             .by_stack_n = options.group_by_stack_n});
    if (const int* status = std::get_if<int>(&read)) return *status;
    if (StreamedTable* table = std::get_if<StreamedTable>(&read)) {
      recording = std::move(table->recording);
      streamed_profile = std::move(table->profile);
      streamed_tables = std::move(table->tables);
      // A recording still being written that turned system-wide between
      // the reads (or the other way): its events are gone, read it whole.
      if (streamed_tables.has_value() != is_system_wide(*recording)) {
        streamed_profile.reset();
        streamed_tables.reset();
        recording = read_recording_for_output(options.input_path, options.strict);
      }
    } else {
      recording = std::move(std::get<Recording>(read));
    }
  } else if (options.gpu) {
    failed = take_read(read_for_gpu_time(options.input_path, options.strict, choice), &StreamedGpuTime::devices,
                       recording, streamed_gpu_time);
    gpu_head_only = recording && !recording->cupti_shim;
  } else {
    recording = read_recording_for_output(options.input_path, options.strict);
  }
  if (failed) return *failed;
  if (!recording) return 1;
  if (!recording->complete)
    std::fprintf(stderr,
                 "gpuprof: warning: %s is incomplete (%s); reporting its %zu complete events\n",
                 options.input_path.c_str(),
                 recording->incomplete_reason.empty() ? "the recorder did not finish"
                                                      : recording->incomplete_reason.c_str(),
                 op_events_read(*recording));
  if (!options.pids.empty() || !options.comms.empty()) {
    if (!is_system_wide(*recording)) {
      std::fprintf(stderr,
                   "gpuprof: error: --pid/--comm choose processes of a system-wide recording (record -a); "
                   "%s records process %d (%s) alone\n",
                   options.input_path.c_str(), recording->process.pid, recording->process.comm.c_str());
      return 2;
    }
    const std::set<uint32_t> chosen = matching_processes(*recording, options.pids, options.comms);
    // The streamed --folded and --pprof chose them as they read
    // (report_reads.h); --gpu of a recording without GPU times read no
    // events, and says so below.
    const bool chosen_in_read = streamed_stacks || streamed_sums;
    const bool selects_here = !chosen_in_read && !gpu_head_only;
    if (chosen.empty()) {
      // What each process did: the streamed reads hold no events, so read them.
      if (!selects_here && !(recording = read_recording_for_output(options.input_path, options.strict))) return 1;
      const auto activity = streamed_tables ? streamed_tables->activity : process_activity(*recording);
      std::fprintf(stderr, "gpuprof: error: no process of %s matches --pid/--comm; it has: %s\n",
                   options.input_path.c_str(), list_processes(*recording, activity).c_str());
      return 2;
    }
    if (selects_here) recording = select_processes(*recording, chosen);
    if (streamed_tables) keep_processes(*streamed_tables, chosen);
  }
  if (metric == FoldedMetric::kSamples && recording->options.sample_hz == 0) {
    std::fprintf(stderr, "gpuprof: error: --metric samples: %s has no CPU samples: record with -F HZ\n",
                 options.input_path.c_str());
    return 2;
  }
  // One rule for every view of data the recording cannot hold: an error
  // that says why, exit 2 (an empty view of data that was recorded is not).
  const char* gpu_view = metric == FoldedMetric::kSelfCudaTime ? "--metric self_cuda_time"
                         : options.kernels                     ? "--kernels"
                         : options.gpu                         ? "--gpu"
                                                               : nullptr;
  if (gpu_view && !recording->cupti_shim) {
    std::fprintf(stderr, "gpuprof: error: %s: %s has no GPU times: %s\n", gpu_view, options.input_path.c_str(),
                 kNoCuptiShimReason);
    return 2;
  }
  if (options.launches && !recording->cuda_runtime) {
    std::fprintf(stderr, "gpuprof: error: --launches: %s has no CUDA launches: %s\n", options.input_path.c_str(),
                 kNoCudaRuntimeReason);
    return 2;
  }
  if (!options.recorder_said_its_counts) {
    if (std::string cuts = stack_cuts_note(count_stack_cuts(*recording)); !cuts.empty())
      std::fputs(cuts.c_str(), stderr);
  }
  if (!options.trace.speedscope.empty())
    return export_speedscope(*recording, options.input_path, options.trace,
                             streamed_calls ? &*streamed_calls : nullptr);
  if (!options.trace.pprof.empty()) {
    TraceExportOptions pprof = options.trace;
    pprof.raw_times = options.raw_times;
    return export_pprof({pprof_input(*recording, options.input_path, streamed_sums ? &*streamed_sums : nullptr)}, pprof);
  }
  if (!options.trace.output.empty())
    return export_chrome_trace(*recording, options.input_path, options.trace,
                               streamed_calls ? &*streamed_calls : nullptr);
  if (metric)
    return print_folded(*recording,
                        streamed_stacks ? std::move(*streamed_stacks)
                                        : folded_stacks_by_process(*recording, *metric, options.raw_times),
                        *metric, options.raw_times);
  if (options.gpu) {
    const std::string text = format_gpu_time_report(
        streamed_gpu_time ? std::move(*streamed_gpu_time) : gpu_time_by_device(*recording), *recording->cupti_shim,
        options.row_limit);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (options.launches || options.kernels) {
    const std::string text =
        options.launches ? format_launch_table(streamed_launches ? std::move(*streamed_launches)
                                                                 : summarize_launches(*recording),
                                               options.row_limit)
                         : format_gpu_kernel_table(streamed_kernels ? std::move(*streamed_kernels)
                                                                    : summarize_gpu_kernels(*recording),
                                                   options.row_limit);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (options.modules)
    return print_module_table(*recording, streamed_modules ? &*streamed_modules : nullptr, options);
  if (options.group_by_input_shape && !recording->options.shapes) {
    std::fprintf(stderr,
                 "gpuprof: error: %s has no input shapes: record with --record-shapes to group by "
                 "input shape\n",
                 options.input_path.c_str());
    return 2;
  }
  if (options.group_by_stack_n > 0 && !recording->options.with_stack) {
    std::fprintf(stderr,
                 "gpuprof: error: %s has no Python stacks of op calls: record with --with-stack to "
                 "group by stack\n",
                 options.input_path.c_str());
    return 2;
  }
  AggregateOptions aggregate_options;
  aggregate_options.group_by_input_shape = options.group_by_input_shape;
  aggregate_options.group_by_stack_n = options.group_by_stack_n;
  aggregate_options.raw_times = options.raw_times;
  Profile profile = streamed_profile ? std::move(*streamed_profile) : aggregate(*recording, aggregate_options);
  if (std::string why = sort_key_unavailable(*sort_key, profile); !why.empty()) {
    std::fprintf(stderr, "gpuprof: error: %s\n", why.c_str());
    return 2;
  }
  std::string text;
  if (is_system_wide(*recording)) {
    // Each process's table as the whole recording's: its times, and (record
    // -a --with-stack) its rows per stack.
    const ProcessTables tables =
        streamed_tables ? std::move(*streamed_tables)
                        : process_tables(*recording, AggregateOptions{.group_by_stack_n = options.group_by_stack_n,
                                                                      .raw_times = options.raw_times});
    text = format_system_report(*recording, tables, options, *sort_key, options.input_path);
  } else {
    text = format_table_report(*recording, profile, options, *sort_key, options.input_path);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace gpuprof::cli
