#include "record/record_outputs.h"

#include <algorithm>

namespace gpuprof {

RecordOutputs::RecordOutputs(ProcessInfo process, ClockInfo clock, std::vector<OpInfo> ops,
                             RecordOptions options, mode_t mode)
    : mode_(mode) {
  defined_.process = std::move(process);
  defined_.clock = clock;
  defined_.ops = std::move(ops);
  defined_.options = options;
}

template <typename Write>
Result<void> RecordOutputs::each(Write write) {
  Result<void> first;  // the first failure
  for (File& file : files_) {
    if (!file.writer) continue;
    Result<void> written = write(file);
    if (!written && first) first = std::move(written);
  }
  return first;
}

Result<void> RecordOutputs::open(Output output, const std::string& path, uint64_t start_monotonic_ns,
                                 const RecordStats& counters_now) {
  File& file = files_[output];
  file = File{};
  ASSIGN_OR_RETURN(RecordWriter writer, RecordWriter::create(path, mode_));
  ClockInfo clock = defined_.clock;
  if (start_monotonic_ns > defined_.clock.start_monotonic_ns) {
    clock.start_realtime_ns += start_monotonic_ns - defined_.clock.start_monotonic_ns;
    clock.start_monotonic_ns = start_monotonic_ns;
  }
  RETURN_IF_ERROR(writer.begin(defined_.process, clock, defined_.ops, defined_.options));
  // The dictionaries so far, with the ids the session already handed out.
  for (const std::string& frame : defined_.sample_frames) RETURN_IF_ERROR(writer.add_sample_frame(frame));
  for (const std::vector<uint32_t>& stack : defined_.sample_stacks) RETURN_IF_ERROR(writer.add_sample_stack(stack));
  for (const std::string& name : defined_.launch_names) RETURN_IF_ERROR(writer.add_launch_name(name));
  if (defined_.probe_costs) RETURN_IF_ERROR(writer.set_probe_costs(*defined_.probe_costs));
  RETURN_IF_ERROR(writer.add_module_names(defined_.module_names));
  RETURN_IF_ERROR(writer.add_job_ranks(defined_.job_ranks));
  RETURN_IF_ERROR(writer.add_native_files(defined_.native_files));
  if (!defined_.processes.empty()) RETURN_IF_ERROR(writer.add_processes(defined_.processes));
  if (!defined_.thread_processes.empty()) RETURN_IF_ERROR(writer.add_thread_processes(defined_.thread_processes));
  file.writer.emplace(std::move(writer));
  file.path = path;
  file.start_ns = clock.start_monotonic_ns;
  file.first_event = events_;
  file.first_sample = samples_;
  file.counters_at_open = counters_now;
  return {};
}

uint64_t RecordOutputs::bytes_written(Output output) const {
  return files_[output].writer ? files_[output].writer->bytes_written() : 0;
}

Result<void> RecordOutputs::close(Output output, const RecordStats& stats, uint64_t end_monotonic_ns) {
  File& file = files_[output];
  if (!file.writer) return {};
  RecordWriter writer = std::move(*file.writer);
  file.writer.reset();
  RecordStats own = stats;
  // After a full disk, the events buffered then are not in the file.
  own.events_recorded = writer.disk_full() ? writer.events_written() : file.events;
  const RecordStats& at_open = file.counters_at_open;
  own.events_lost -= std::min(own.events_lost, at_open.events_lost);
  own.mem_events_lost -= std::min(own.mem_events_lost, at_open.mem_events_lost);
  own.samples_lost -= std::min(own.samples_lost, at_open.samples_lost);
  if (defined_.cuda_runtime) RETURN_IF_ERROR(writer.set_cuda_runtime(*defined_.cuda_runtime));
  if (defined_.cupti_shim) RETURN_IF_ERROR(writer.set_cupti_shim(*defined_.cupti_shim));
  RETURN_IF_ERROR(writer.set_thread_names(defined_.thread_names));
  return writer.finish(own, end_monotonic_ns);
}

Result<uint32_t> RecordOutputs::add_op(const OpInfo& op) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_ops({op}); }));
  defined_.ops.push_back(op);
  return static_cast<uint32_t>(defined_.ops.size() - 1);
}

Result<void> RecordOutputs::add_ops(const std::vector<OpInfo>& ops) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_ops(ops); }));
  defined_.ops.insert(defined_.ops.end(), ops.begin(), ops.end());
  return {};
}

Result<void> RecordOutputs::add_processes(const std::vector<ProcessInfo>& processes) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_processes(processes); }));
  for (const ProcessInfo& process : processes) {
    std::erase_if(defined_.processes, [&](const ProcessInfo& p) { return p.pid == process.pid; });
    defined_.processes.push_back(process);
  }
  return {};
}

template <typename T>
Result<void> RecordOutputs::add_everywhere(Result<void> (RecordWriter::*add)(const std::vector<T>&),
                                           const std::vector<T>& items, std::vector<T>& defined) {
  RETURN_IF_ERROR(each([&](File& f) { return (*f.writer.*add)(items); }));
  defined.insert(defined.end(), items.begin(), items.end());
  return {};
}

Result<void> RecordOutputs::add_thread_processes(const std::vector<ThreadProcess>& threads) {
  return add_everywhere(&RecordWriter::add_thread_processes, threads, defined_.thread_processes);
}

Result<void> RecordOutputs::add_native_files(const std::vector<NativeFile>& files) {
  return add_everywhere(&RecordWriter::add_native_files, files, defined_.native_files);
}

void RecordOutputs::forget_process(uint32_t pid) {
  std::erase_if(defined_.native_files, [&](const NativeFile& f) { return static_cast<uint32_t>(f.pid) == pid; });
  std::erase_if(defined_.processes, [&](const ProcessInfo& p) { return static_cast<uint32_t>(p.pid) == pid; });
  std::erase_if(defined_.thread_processes, [&](const ThreadProcess& t) { return t.pid == pid; });
  std::erase_if(defined_.job_ranks, [&](const JobRank& r) { return static_cast<uint32_t>(r.pid) == pid; });
}

Result<void> RecordOutputs::add_module_names(const std::vector<ModuleName>& names) {
  return add_everywhere(&RecordWriter::add_module_names, names, defined_.module_names);
}

Result<void> RecordOutputs::add_job_ranks(const std::vector<JobRank>& ranks) {
  return add_everywhere(&RecordWriter::add_job_ranks, ranks, defined_.job_ranks);
}

Result<void> RecordOutputs::set_probe_costs(const ProbeCosts& costs) {
  defined_.probe_costs = costs;  // the latest, for a file opened later
  return each([&](File& f) { return f.writer->set_probe_costs(costs); });
}

Result<void> RecordOutputs::append_events(const gp_event* events, size_t count) {
  Result<void> written = each([&](File& f) -> Result<void> {
    RETURN_IF_ERROR(f.writer->append_events(events, count));
    f.events += count;
    return {};
  });
  events_ += count;
  return written;
}

Result<void> RecordOutputs::append_shapes(uint64_t event_index, const InputShapes& shapes) {
  return each([&](File& f) -> Result<void> {
    if (event_index < f.first_event) return {};
    return f.writer->append_shapes(event_index - f.first_event, shapes);
  });
}

Result<void> RecordOutputs::append_mem_events(const gp_mem_event* events, size_t count) {
  return each([&](File& f) { return f.writer->append_mem_events(events, count); });
}

Result<void> RecordOutputs::add_sample_frame(const std::string& name) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_sample_frame(name); }));
  defined_.sample_frames.push_back(name);
  return {};
}

Result<void> RecordOutputs::add_sample_stack(const std::vector<uint32_t>& frame_ids) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_sample_stack(frame_ids); }));
  defined_.sample_stacks.push_back(frame_ids);
  return {};
}

Result<void> RecordOutputs::append_samples(const CpuSample* samples, size_t count) {
  Result<void> written = each([&](File& f) { return f.writer->append_samples(samples, count); });
  samples_ += count;
  return written;
}

Result<void> RecordOutputs::append_entry_stack(uint64_t event_index, uint32_t stack_id) {
  return each([&](File& f) -> Result<void> {
    if (event_index < f.first_event) return {};
    return f.writer->append_entry_stack(event_index - f.first_event, stack_id);
  });
}

Result<void> RecordOutputs::append_backward_stack(uint64_t event_index, uint32_t stack_id) {
  return each([&](File& f) -> Result<void> {
    if (event_index < f.first_event) return {};
    return f.writer->append_backward_stack(event_index - f.first_event, stack_id);
  });
}

Result<void> RecordOutputs::append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) {
  return each([&](File& f) -> Result<void> {
    if (sample_index < f.first_sample) return {};
    return f.writer->append_sample_kernel_stack(sample_index - f.first_sample, stack_id);
  });
}

Result<void> RecordOutputs::add_launch_name(const std::string& name) {
  RETURN_IF_ERROR(each([&](File& f) { return f.writer->add_launch_name(name); }));
  defined_.launch_names.push_back(name);
  return {};
}

Result<void> RecordOutputs::append_launches(const CudaLaunch* launches, size_t count) {
  return each([&](File& f) { return f.writer->append_launches(launches, count); });
}

Result<void> RecordOutputs::append_gpu_correlations(const GpuCorrelation* correlations, size_t count) {
  return each([&](File& f) { return f.writer->append_gpu_correlations(correlations, count); });
}

Result<void> RecordOutputs::append_gpu_activities(const GpuActivity* activities, size_t count) {
  return each([&](File& f) { return f.writer->append_gpu_activities(activities, count); });
}

Result<void> RecordOutputs::flush() {
  return each([&](File& f) { return f.writer->flush(); });
}

}  // namespace gpuprof
