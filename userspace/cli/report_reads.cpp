// report_reads.cpp: report's reads, whole or streamed (report_reads.h).
#include "cli/report_reads.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <unordered_set>
#include <utility>

#include "analyze/aggregator.h"
#include "analyze/chosen_processes_stream.h"
#include "analyze/gpu_time.h"
#include "analyze/process_filter.h"
#include "analyze/sorted_gpu_time.h"
#include "analyze/streamed_aggregate.h"
#include "analyze/streamed_figures_table.h"
#include "analyze/streamed_metric_sums.h"
#include "analyze/streamed_module_tree.h"
#include "analyze/streamed_process_metric_sums.h"
#include "analyze/streamed_process_tables.h"
#include "analyze/streamed_host_waits.h"
#include "analyze/streamed_stack_sums.h"
#include "output/launch_table.h"
#include "output/pprof.h"
#include "output/streamed_chrome_trace.h"
#include "output/streamed_kernel_table.h"
#include "output/streamed_launch_table.h"
#include "record/record_file.h"

namespace gpuprof::cli {

std::optional<Recording> read_recording_for_output(const std::string& path, bool strict, RecordStream* stream,
                                                   bool* whole_needed) {
  const CorruptChunks corrupt = strict ? CorruptChunks::refuse : CorruptChunks::skip;
  Result<Recording> recording = stream ? read_recording_streamed(path, corrupt, *stream, whole_needed)
                                       : read_recording(path, corrupt);
  if (!recording) {
    if (whole_needed && *whole_needed) return std::nullopt;
    std::fprintf(stderr, "gpuprof: error: %s\n", recording.error().c_str());
    return std::nullopt;
  }
  for (const LostChunk& lost : recording->lost_chunks) std::fprintf(stderr, "gpuprof: warning: %s\n", lost.message.c_str());
  return std::move(*recording);
}

bool streaming_allowed() {
  const char* whole = std::getenv("GPUPROF_REPORT_READ_WHOLE");
  return whole == nullptr || *whole == '\0';
}


namespace {

// What an output streams beyond one process's op events (else the
// recording is read whole): a record -a recording's (system_wide); one with
// allocator events or GPU activities (figures), which its stream joins to
// the calls (streamed_call_figures.h) or drops; one with allocator events
// (memory), which its stream takes in time order (time_ordered_mem_events.h);
// one with GPU activities (gpu), which its stream orders or drops
// (output/streamed_gpu_activities.h); one that works from the GPU records
// themselves before the events (gpu_time: report --gpu), to which the first
// read hands them. reads_op_threads: whether the stream the output makes of
// a head reads JoinBounds::op_threads (it joins records to calls by their
// thread, or counts the processes --pid/--comm choose that ran ops); only
// then are the events read for them (read_op_threads).
struct StreamScope {
  bool system_wide = false;
  bool figures = false;
  bool memory = false;
  bool gpu = false;
  SortedGpuTime* gpu_time = nullptr;  // report --gpu: takes the GPU records
  std::function<bool(const Recording& head)> reads_op_threads;
  bool takes_memory() const { return figures || memory; }
  bool takes_gpu() const { return figures || gpu; }
};

// The first of a streamed report's two reads: every chunk but the events,
// for what must be known before them (the probe costs, written last; where
// the ENTRY_STACKS, BACKWARD_STACKS and ENTRY_SHAPES pairs end; for an
// output that joins allocator events and GPU activities to calls, the
// bounds of that join); a recording it cannot stream it reads whole.
//
// It never decodes the op events, the bulk of a recording: the one thing
// the join takes from them, the threads that ran ops, matters only to an
// output that reads them (StreamScope::reads_op_threads) when there are
// records to join by thread or processes to tell apart (needs_op_threads),
// and read_op_threads() then reads just that.
class StreamingCheck : public RecordStream {
 public:
  explicit StreamingCheck(const StreamScope& scope) : scope_(scope) {}
  bool wants(const Recording& head) override {
    // -a recordings (pid 0) only for an output that streams them; memory
    // only for one that joins or drops it.
    accepted = (head.process.pid != 0 || scope_.system_wide) &&
               (!head.options.memory || scope_.takes_memory());
    return accepted;
  }
  bool skips_events() const override { return true; }
  // Past a lost chunk the read decodes them all the same: nothing to note.
  void on_events(std::span<const gp_event>, uint64_t) override {}
  // Whether the output's stream needs JoinBounds::op_threads: a join
  // matches allocator events, launches and GPU correlations to calls by
  // their thread (so only when there are some), and a record -a
  // recording's choice of processes counts those that ran ops.
  bool needs_op_threads(const Recording& head) const {
    return scope_.reads_op_threads && scope_.reads_op_threads(head) &&
           (records_by_thread_ || is_system_wide(head));
  }
  void on_entry_stack(uint64_t event_index, uint32_t) override { last_pairs.entry_stack = event_index; }
  void on_backward_stack(uint64_t event_index, uint32_t) override { last_pairs.backward_stack = event_index; }
  void on_entry_shape(uint64_t event_index, uint32_t) override { last_pairs.entry_shape = event_index; }
  bool on_mem_events(std::span<const gp_mem_event> events) override {
    records_by_thread_ = true;
    if (scope_.takes_memory())
      bounds.mem_event_ts.push_back(least(events, [](const gp_mem_event& e) { return e.ts_ns; }));
    return scope_.takes_memory();
  }
  bool on_launches(std::span<const CudaLaunch> launches) override {
    records_by_thread_ = true;
    if (!scope_.figures) return true;
    bounds.launch_ts.push_back(least(launches, [](const CudaLaunch& l) { return l.ts_ns; }));
    for (const CudaLaunch& l : launches)
      if (l.api == GP_LAUNCH_KERNEL || l.api == GP_LAUNCH_KERNEL_EXC) bounds.kernel_launch_names.insert(l.name_id);
    return true;
  }
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override {
    records_by_thread_ = true;
    if (scope_.gpu_time) scope_.gpu_time->add_correlations(correlations);
    if (!scope_.takes_gpu()) return;
    bounds.gpu_correlation_ts.push_back(least(correlations, [](const GpuCorrelation& c) { return c.ts_ns; }));
    bounds.gpu_correlation_id.push_back(least(correlations, [](const GpuCorrelation& c) { return c.correlation_id; }));
  }
  bool on_gpu_activities(std::span<const GpuActivity> activities) override {
    if (scope_.gpu_time) {
      scope_.gpu_time->add_activities(activities);
      return true;
    }
    if (!scope_.takes_gpu()) return false;  // their calls need every call: read whole
    bounds.gpu_activity_correlation.push_back(
        least(activities, [](const GpuActivity& a) { return a.correlation_id; }));
    bounds.gpu_activity_start.push_back(least(activities, [](const GpuActivity& a) { return a.start_ns; }));
    return true;
  }
  bool accepted = false;
  LastPairs last_pairs;  // where each kind of pair ends
  JoinBounds bounds;     // figures: the join's (its op_threads: read_op_threads())

 private:
  template <typename Record, typename Key>
  static uint64_t least(std::span<const Record> records, Key key) {
    uint64_t least = UINT64_MAX;
    for (const Record& r : records) least = std::min<uint64_t>(least, key(r));
    return least;
  }
  StreamScope scope_;
  bool records_by_thread_ = false;  // allocator events, launches or GPU correlations were read
};

// The threads with op events among a recording's first `events` (as many
// as the first read counted: a recording still being written may have more
// by now), for JoinBounds::op_threads.
class OpThreadsRead : public RecordStream {
 public:
  explicit OpThreadsRead(uint64_t events) : events_(events) {}
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> events, uint64_t first) override {
    if (first >= events_) return;
    uint32_t last = 0;
    for (const gp_event& e : events.first(static_cast<size_t>(std::min<uint64_t>(events.size(), events_ - first)))) {
      if (e.tid == last) continue;  // runs of one thread's events are the rule
      threads.insert(e.tid);
      last = e.tid;
    }
  }
  // The events and the ops they name; every other record the first read
  // has read already is passed over.
  bool takes(ChunkType type) const override {
    return type == ChunkType::EVENTS || type == ChunkType::OP_EVENTS || type == ChunkType::MORE_OPS;
  }
  std::unordered_set<uint32_t> threads;

 private:
  const uint64_t events_;
};

// The first read's events read again for their threads alone; false after
// printing the error of a read that failed (its warnings were the first
// read's).
bool read_op_threads(const std::string& path, bool strict, uint64_t events, std::unordered_set<uint32_t>& threads) {
  OpThreadsRead read(events);
  bool whole_needed = false;  // never: it takes every kind of record
  Result<Recording> recording =
      read_recording_streamed(path, strict ? CorruptChunks::refuse : CorruptChunks::skip, read, &whole_needed);
  if (!recording) {
    std::fprintf(stderr, "gpuprof: error: %s\n", recording.error().c_str());
    return false;
  }
  threads = std::move(read.threads);
  return true;
}

// The first read of a streamed output. A Recording: one read whole (it
// cannot be streamed); an int: the exit status of a read that failed.
struct StreamHead {
  Recording recording;  // all but the events
  LastPairs last_pairs;  // StreamingCheck's
  JoinBounds bounds;     // StreamingCheck's
};
std::variant<StreamHead, Recording, int> read_stream_head(const std::string& path, bool strict,
                                                          const StreamScope& scope) {
  StreamingCheck check(scope);
  bool whole_needed = false;
  std::optional<Recording> head = read_recording_for_output(path, strict, &check, &whole_needed);
  if (!head && !whole_needed) return 1;
  if (!head) {  // GPU activities: their ops need every call
    head = read_recording_for_output(path, strict);
    if (!head) return 1;
    return std::move(*head);
  }
  if (!check.accepted) return std::move(*head);  // read whole
  if (check.needs_op_threads(*head) && !read_op_threads(path, strict, head->streamed_events, check.bounds.op_threads))
    return 1;
  return StreamHead{std::move(*head), check.last_pairs, std::move(check.bounds)};
}

// A recording read whole after a first read that said what it lost (its
// warnings not repeated); nullopt after printing the error.
std::optional<Recording> reread_whole(const std::string& path, bool strict) {
  Result<Recording> whole = read_recording(path, strict ? CorruptChunks::refuse : CorruptChunks::skip);
  if (whole) return std::move(*whole);
  std::fprintf(stderr, "gpuprof: error: %s\n", whole.error().c_str());
  return std::nullopt;
}

// The second read, its events handed to `stream`: the Recording it
// returned (streamed is false when the stream declined it, or when a
// recording still being written got records since that stopped the
// stream, and it was read whole), or an exit status.
struct SecondRead {
  Recording recording;
  bool streamed = true;
};
std::variant<SecondRead, int> read_streamed(const std::string& path, bool strict, RecordStream& stream) {
  bool whole_needed = false;
  const CorruptChunks corrupt = strict ? CorruptChunks::refuse : CorruptChunks::skip;
  Result<Recording> recording = read_recording_streamed(path, corrupt, stream, &whole_needed);
  if (!recording && whole_needed) {
    recording = read_recording(path, corrupt);
    if (recording) return SecondRead{std::move(*recording), false};
  }
  if (!recording) {
    std::fprintf(stderr, "gpuprof: error: %s\n", recording.error().c_str());
    return 1;
  }
  // A stream that declined the recording (its wants()) left it read whole.
  const bool streamed = recording->streamed;
  return SecondRead{std::move(*recording), streamed};
}

// The stream a read_twice make() returned, as it is or behind a pointer.
template <typename Stream>
RecordStream& stream_of(Stream& stream) {
  return stream;
}
template <typename Stream>
RecordStream& stream_of(std::unique_ptr<Stream>& stream) {
  return *stream;
}

// Both reads of a streamed output: make(head) builds the stream from the
// first read's head (it must return it as a prvalue: a stream holds
// pointers into itself), finish(stream, recording) the output once the
// second read is done. A Recording: one read whole, as it could not be
// streamed; an int: the exit status of a read that failed.
// `accept`, when given, may still refuse the head (what the first read
// found: launches, say): the recording is then read whole. scope: what
// the output streams beyond one process's op events (else read whole).
// make may return its stream behind a std::unique_ptr.
template <typename Output, typename Make, typename Finish>
std::variant<Output, Recording, int> read_twice(const std::string& path, bool strict, Make make, Finish finish,
                                                const std::function<bool(const StreamHead&)>& accept = {},
                                                const StreamScope& scope = {}) {
  auto first = read_stream_head(path, strict, scope);
  if (const int* status = std::get_if<int>(&first)) return *status;
  if (Recording* whole = std::get_if<Recording>(&first)) return std::move(*whole);
  if (accept && !accept(std::get<StreamHead>(first))) {
    std::optional<Recording> whole = reread_whole(path, strict);
    if (!whole) return 1;
    return std::move(*whole);
  }
  auto stream = make(std::get<StreamHead>(first));
  auto second = read_streamed(path, strict, stream_of(stream));
  if (const int* status = std::get_if<int>(&second)) return *status;
  SecondRead& read = std::get<SecondRead>(second);
  if (!read.streamed) return std::move(read.recording);
  return finish(stream, std::move(read.recording));
}

// Whether a head's stacks stream (--folded, --pprof): a system-wide
// recording's (streamed_process_metric_sums.h) only when its header says
// record -a, as the whole read tells them apart.
bool folded_streamable(const StreamHead& first) {
  const Recording& head = first.recording;
  return is_system_wide(head) ? head.process.pid == 0 : head.process.pid != 0;
}

// Whether --pid/--comm choose some processes of this recording's.
bool chooses(const ProcessChoice& choice, const Recording& head) { return choice.any() && is_system_wide(head); }

// Whether what they choose streams (chosen_processes_stream.h); a choice
// of none is read whole, for run_report to say what each process did.
bool chosen_processes_streamable(const ProcessChoice& choice, const Recording& head) {
  return !chooses(choice, head) ||
         (ChosenProcessesStream::serves(head) && !matching_processes(head, choice.pids, choice.comms).empty());
}

// How many of the processes --pid/--comm choose ran ops (the first read
// noted the threads with op events); a thread no THREAD_PROCESSES names
// counts as a process of its own.
size_t processes_with_ops(const StreamHead& first, const ProcessChoice& choice) {
  const std::set<uint32_t> chosen = matching_processes(first.recording, choice.pids, choice.comms);
  const auto process_of = process_of_thread(first.recording);
  std::set<uint32_t> with_ops;
  size_t unknown = 0;
  for (uint32_t tid : first.bounds.op_threads) {
    const auto it = process_of.find(tid);
    if (it == process_of.end())
      unknown++;
    else if (chosen.count(it->second))
      with_ops.insert(it->second);
  }
  return with_ops.size() + unknown;
}

// The stream make(head, last pairs) makes, or (--pid/--comm of a record -a
// recording) the one make(selection, pairs) makes of the chosen processes'
// selection, fed theirs alone, each pair before its event
// (chosen_processes_stream.h).
template <typename Make>
std::unique_ptr<RecordStream> all_or_chosen(const ProcessChoice& choice, const StreamHead& head, Make make) {
  if (!chooses(choice, head.recording)) return make(head.recording, head.last_pairs);
  return std::make_unique<ChosenProcessesStream>(
      head.recording, matching_processes(head.recording, choice.pids, choice.comms), head.last_pairs, make);
}

// The output's stream in what all_or_chosen() made, once the read is done.
template <typename Stream>
Stream& output_stream(std::unique_ptr<RecordStream>& stream) {
  auto* chosen = dynamic_cast<ChosenProcessesStream*>(stream.get());
  return dynamic_cast<Stream&>(chosen ? chosen->finished_inner() : *stream);
}

// A system-wide read's sums, of the processes --pid/--comm choose, and the
// recording theirs, with the events their selection would hold: theirs and
// every CUT (select_processes of a streamed read counts none).
std::map<uint32_t, ProcessMetricSums> chosen_processes(StreamedProcessMetricSums& stream, Recording& recording,
                                                       const ProcessChoice& choice) {
  std::map<uint32_t, ProcessMetricSums> sums = std::move(stream).finish(recording);
  const uint64_t cuts = stream.cuts();  // after finish(), which hands on the events still held
  const std::set<uint32_t> chosen =
      choice.any() ? matching_processes(recording, choice.pids, choice.comms) : std::set<uint32_t>{};
  if (chosen.empty()) return sums;
  std::erase_if(sums, [&](const auto& process) { return !chosen.count(process.first); });
  uint64_t events = cuts;
  for (const auto& [pid, process] : sums) events += process.op_events;
  recording = select_processes(recording, chosen);
  recording.streamed_events = events;
  return sums;
}

}  // namespace

std::variant<StreamedTable, Recording, int> read_for_table(const std::string& path, bool strict, bool raw_times,
                                                          bool filtered, const TableGrouping& grouping) {
  return read_twice<StreamedTable>(
      path, strict,
      [&](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        // As the table tells one from the other (run_report).
        const ProbeCosts* costs = compensation_costs(head.recording, raw_times);
        const TableGrouping table_grouping{.by_input_shape = grouping.by_input_shape,
                                           .by_stack_n = grouping.by_stack_n,
                                           .last_entry_shape = head.last_pairs.entry_shape,
                                           .last_entry_stack = head.last_pairs.entry_stack};
        if (is_system_wide(head.recording))
          return std::make_unique<StreamedProcessTables>(costs, raw_times, table_grouping);
        if (StreamedFiguresTable::serves(head.recording))
          return std::make_unique<StreamedFiguresTable>(costs, raw_times, head.recording, head.bounds,
                                                        table_grouping);
        return std::make_unique<StreamedAggregate>(costs, raw_times, table_grouping);
      },
      [](std::unique_ptr<RecordStream>& stream, Recording recording) {
        StreamedTable table;
        if (auto* each = dynamic_cast<StreamedProcessTables*>(stream.get()))
          table.tables = std::move(*each).finish(recording);
        else if (auto* figures = dynamic_cast<StreamedFiguresTable*>(stream.get()))
          table.profile = std::move(*figures).finish(recording);
        else
          table.profile = std::move(dynamic_cast<StreamedAggregate&>(*stream)).finish(recording);
        table.recording = std::move(recording);
        return table;
      },
      // The note on stacks cut counts the chosen processes' calls; a
      // system-wide table with memory or GPU columns is made whole.
      [filtered](const StreamHead& first) {
        const Recording& head = first.recording;
        const bool figures = head.options.memory || head.cupti_shim.has_value() || gpu_activities_read(head) > 0;
        return !(filtered && head.options.with_stack) && !(figures && is_system_wide(head));
      },
      StreamScope{.system_wide = true, .figures = true, .reads_op_threads = &StreamedFiguresTable::serves});
}

std::variant<StreamedFolded, Recording, int> read_for_folded(const std::string& path, bool strict, FoldedMetric metric,
                                                            bool raw_times, const ProcessChoice& choice) {
  const StackMetric of_metric = metric == FoldedMetric::kSamples        ? StackMetric::kSamples
                                : metric == FoldedMetric::kSelfCudaTime ? StackMetric::kSelfCudaTime
                                                                        : StackMetric::kSelfCpuTime;
  return read_twice<StreamedFolded>(
      path, strict,
      [&](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        const ProbeCosts* costs = compensation_costs(head.recording, raw_times);
        if (is_system_wide(head.recording))
          return std::make_unique<StreamedProcessMetricSums>(head.recording, costs, std::vector{of_metric},
                                                             head.last_pairs);
        return std::make_unique<StreamedStackSums>(head.recording, costs, head.last_pairs.entry_stack, of_metric,
                                                   &head.bounds);
      },
      [metric, &choice](std::unique_ptr<RecordStream>& stream, Recording recording) {
        auto* each = dynamic_cast<StreamedProcessMetricSums*>(stream.get());
        FoldedStacks folded =
            each ? folded_by_process_from_sums(chosen_processes(*each, recording, choice), metric)
                 : folded_from_sums(std::move(dynamic_cast<StreamedStackSums&>(*stream)).finish(), metric);
        return StreamedFolded{std::move(recording), std::move(folded)};
      },
      &folded_streamable,
      StreamScope{.system_wide = true, .figures = true, .reads_op_threads = [of_metric](const Recording& head) {
                    return StreamedStackSums::joins_by_thread(of_metric) && !is_system_wide(head);
                  }});
}

std::variant<StreamedPprof, Recording, int> read_for_pprof(const std::string& path, bool strict, bool raw_times,
                                                           const ProcessChoice& choice) {
  return read_twice<StreamedPprof>(
      path, strict,
      [&](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        const ProbeCosts* costs = compensation_costs(head.recording, raw_times);
        if (is_system_wide(head.recording))
          return std::make_unique<StreamedProcessMetricSums>(head.recording, costs, pprof_metrics(head.recording),
                                                             head.last_pairs);
        return std::make_unique<StreamedMetricSums>(head.recording, costs, head.last_pairs.entry_stack,
                                                    pprof_metrics(head.recording), &head.bounds);
      },
      [&choice](std::unique_ptr<RecordStream>& stream, Recording recording) {
        StreamedPprof out;
        if (auto* each = dynamic_cast<StreamedProcessMetricSums*>(stream.get()))
          out.sums.by_process = chosen_processes(*each, recording, choice);
        else
          out.sums.sums = std::move(dynamic_cast<StreamedMetricSums&>(*stream)).finish();
        out.recording = std::move(recording);
        return out;
      },
      &folded_streamable,
      StreamScope{.system_wide = true, .figures = true, .reads_op_threads = [](const Recording& head) {
                    return StreamedMetricSums::joins_by_thread(pprof_metrics(head)) && !is_system_wide(head);
                  }});
}

std::variant<StreamedTrace, Recording, int> read_for_trace(const std::string& path, bool strict,
                                                           const TraceRead& read) {
  return read_twice<StreamedTrace>(
      path, strict,
      [&read](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        const GpuActivityBounds gpu{.activity_start = head.bounds.gpu_activity_start,
                                    .activity_correlation = head.bounds.gpu_activity_correlation,
                                    .correlation_id = head.bounds.gpu_correlation_id};
        return all_or_chosen(read.choice, head, [&](const Recording& of, const LastPairs& pairs) {
          auto trace = std::make_unique<StreamedChromeTrace>(of, pairs.entry_stack, pairs.entry_shape, read.ops,
                                                             head.bounds.mem_event_ts, gpu, read.calls_only);
          if (StreamedChromeTrace::joins_by_thread(head.recording, read.ops.has_value()))
            trace->keep_launches_by_their_calls(head.bounds);
          return trace;
        });
      },
      [](std::unique_ptr<RecordStream>& stream, Recording recording) {
        StreamedTraceCalls calls = output_stream<StreamedChromeTrace>(stream).finish();
        return StreamedTrace{std::move(recording), std::move(calls)};
      },
      [&read](const StreamHead& first) {
        const Recording& head = first.recording;
        return (read.system_wide || !is_system_wide(head)) && chosen_processes_streamable(read.choice, head);
      },
      // --ops joins the launches and GPU activities to calls: the join's bounds.
      StreamScope{.system_wide = true, .figures = read.ops.has_value(), .memory = true, .gpu = true,
                  .reads_op_threads = [&read](const Recording& head) {
                    return StreamedChromeTrace::joins_by_thread(head, read.ops.has_value());
                  }});
}

namespace {

// Whether report --modules of a recording with this head may stream: it
// needs entry stacks (without, it is an error, said once read whole), and
// module memory needs every module call.
bool modules_may_stream(const Recording& head) { return head.options.with_stack && !head.options.memory; }

}  // namespace

std::variant<StreamedModules, Recording, int> read_for_modules(const std::string& path, bool strict, bool raw_times,
                                                               const ProcessChoice& choice) {
  return read_twice<StreamedModules>(
      path, strict,
      [&](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        return all_or_chosen(choice, head, [&](const Recording& of, const LastPairs& pairs) {
          return std::make_unique<StreamedModuleTree>(of, compensation_costs(of, raw_times), pairs.entry_stack,
                                                      pairs.backward_stack, &head.bounds);
        });
      },
      [](std::unique_ptr<RecordStream>& stream, Recording recording) {
        ModuleTree built = std::move(output_stream<StreamedModuleTree>(stream)).finish();
        return StreamedModules{std::move(recording), std::move(built)};
      },
      [&choice](const StreamHead& first) {
        const Recording& head = first.recording;
        // Read whole unless it may stream; so is a record -a recording but
        // for the processes --pid/--comm choose, of which one at most ran
        // ops (the whole read says when more did).
        if (!modules_may_stream(head)) return false;
        if (!is_system_wide(head)) return true;
        return chooses(choice, head) && chosen_processes_streamable(choice, head) &&
               processes_with_ops(first, choice) <= 1;
      },
      // GPU time joined to calls (StreamedModuleTree); the processes that ran
      // ops. Neither for a recording read whole all the same.
      StreamScope{.system_wide = true, .figures = true, .reads_op_threads = [&choice](const Recording& head) {
                    if (!modules_may_stream(head)) return false;
                    return is_system_wide(head) ? chooses(choice, head) : StreamedModuleTree::joins_by_thread(head);
                  }});
}

std::variant<StreamedKernels, Recording, int> read_for_kernels(const std::string& path, bool strict) {
  return read_twice<StreamedKernels>(
      path, strict, [](const StreamHead& head) { return StreamedKernelTable(head.bounds); },
      [](StreamedKernelTable& kernels, Recording recording) {
        GpuKernelSummary summary = std::move(kernels).finish(recording);
        return StreamedKernels{std::move(recording), std::move(summary)};
      },
      // CUPTI's records joined to calls (without them there are no kernels).
      {}, StreamScope{.figures = true, .reads_op_threads = [](const Recording& head) {
                        return head.cupti_shim.has_value();
                      }});
}

std::variant<StreamedGpuTime, Recording, int> read_for_gpu_time(const std::string& path, bool strict,
                                                                 const ProcessChoice& choice) {
  if (!streaming_allowed()) {
    std::optional<Recording> whole = read_recording_for_output(path, strict);
    if (!whole) return 1;
    return std::move(*whole);
  }
  // Memory taken (dropped), GPU records sorted as they come.
  SortedGpuTime sorted;
  auto first = read_stream_head(path, strict, StreamScope{.system_wide = true, .memory = true, .gpu_time = &sorted});
  if (const int* status = std::get_if<int>(&first)) return *status;
  if (Recording* whole = std::get_if<Recording>(&first)) return std::move(*whole);
  StreamHead& head = std::get<StreamHead>(first);
  if (!head.recording.cupti_shim) return std::move(head.recording);  // report says it has no GPU times
  if (chooses(choice, head.recording)) {  // report chooses them from the whole read
    std::optional<Recording> whole = reread_whole(path, strict);
    if (!whole) return 1;
    return std::move(*whole);
  }
  HostWaitMoments moments;
  GpuTimeDraft draft = std::move(sorted).finish(head.recording.launch_names, moments);
  StreamedHostWaits stream(head.recording, std::move(moments), draft.devices.size(), head.last_pairs.entry_stack);
  auto second = read_streamed(path, strict, stream);
  if (const int* status = std::get_if<int>(&second)) return *status;
  SecondRead& read = std::get<SecondRead>(second);
  if (!read.streamed) return std::move(read.recording);
  std::vector<std::vector<GpuHostWait>> host_waits = std::move(stream).finish();
  for (size_t device = 0; device < draft.devices.size(); device++)
    draft.devices[device].host_waits = std::move(host_waits[device]);
  return StreamedGpuTime{std::move(read.recording), std::move(draft.devices)};
}

// A read of the launches and GPU records alone (the events dropped as they
// come), for CUPTI's names of the launches (SortedLaunchNames).
class CuptiNamesRead : public RecordStream {
 public:
  bool wants(const Recording&) override { return true; }
  bool skips_events() const override { return true; }
  void on_events(std::span<const gp_event>, uint64_t) override {}
  bool on_launches(std::span<const CudaLaunch> launches) override {
    names.add_launches(launches);
    return true;
  }
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override {
    names.add_correlations(correlations);
  }
  bool on_gpu_activities(std::span<const GpuActivity> activities) override {
    names.add_activities(activities);
    return true;
  }
  SortedLaunchNames names;
};

// CUPTI's names of the launches of a recording whose first read found
// launches that may take one; nullopt when that read fails (the launch
// table then reads whole, and says why).
std::optional<StreamedLaunchTable::CuptiNames> read_cupti_launch_names(const std::string& path, bool strict,
                                                                      const std::vector<std::string>& launch_names) {
  CuptiNamesRead read;
  bool whole_needed = false;
  Result<Recording> done = read_recording_streamed(path, strict ? CorruptChunks::refuse : CorruptChunks::skip, read,
                                                   &whole_needed);
  if (!done) return std::nullopt;
  return std::move(read.names).names(launch_names);
}

std::variant<StreamedLaunches, Recording, int> read_for_launches(const std::string& path, bool strict,
                                                                 const ProcessChoice& choice) {
  return read_twice<StreamedLaunches>(
      path, strict,
      [&](const StreamHead& head) -> std::unique_ptr<RecordStream> {
        // A launch that may take a name from CUPTI: a read names them all
        // first (by their place in the file, so not for the processes
        // --pid/--comm choose, which are read whole then).
        std::optional<StreamedLaunchTable::CuptiNames> names;
        if (!chooses(choice, head.recording) && StreamedLaunchTable::needs_cupti_names(head.recording, head.bounds))
          names = read_cupti_launch_names(path, strict, head.recording.launch_names);
        return all_or_chosen(choice, head, [&](const Recording& of, const LastPairs&) {
          // Once (read whole for chosen processes): the names are read as
          // the launches stream by.
          return std::make_unique<StreamedLaunchTable>(of, head.bounds, std::move(names));
        });
      },
      [](std::unique_ptr<RecordStream>& stream, Recording recording) {
        LaunchSummary summary = std::move(output_stream<StreamedLaunchTable>(stream)).finish(recording);
        return StreamedLaunches{std::move(recording), std::move(summary)};
      },
      [&choice](const StreamHead& first) { return chosen_processes_streamable(choice, first.recording); },
      StreamScope{.system_wide = true, .figures = true, .reads_op_threads = [](const Recording&) { return true; }});
}

}  // namespace gpuprof::cli
