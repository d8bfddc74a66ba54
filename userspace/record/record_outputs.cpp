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
bool RecordOutputs::each(std::string* error, Write write) {
  bool ok = true;
  for (File& file : files_) {
    if (!file.writer) continue;
    std::string err;
    if (!write(file, err) && ok) {
      ok = false;
      *error = err;
    }
  }
  return ok;
}

bool RecordOutputs::open(Output output, const std::string& path, uint64_t start_monotonic_ns,
                         const RecordStats& counters_now, std::string* error) {
  File& file = files_[output];
  file = File{};
  auto writer = RecordWriter::create(path, error, mode_);
  if (!writer) return false;
  ClockInfo clock = defined_.clock;
  if (start_monotonic_ns > defined_.clock.start_monotonic_ns) {
    clock.start_realtime_ns += start_monotonic_ns - defined_.clock.start_monotonic_ns;
    clock.start_monotonic_ns = start_monotonic_ns;
  }
  if (!writer->begin(defined_.process, clock, defined_.ops, defined_.options, error)) return false;
  // The dictionaries so far, with the ids the session already handed out.
  for (const std::string& frame : defined_.sample_frames)
    if (!writer->add_sample_frame(frame, error)) return false;
  for (const std::vector<uint32_t>& stack : defined_.sample_stacks)
    if (!writer->add_sample_stack(stack, error)) return false;
  for (const std::string& name : defined_.launch_names)
    if (!writer->add_launch_name(name, error)) return false;
  if (defined_.probe_costs && !writer->set_probe_costs(*defined_.probe_costs, error)) return false;
  if (!writer->add_module_names(defined_.module_names, error)) return false;
  if (!writer->add_job_ranks(defined_.job_ranks, error)) return false;
  if (!writer->add_native_files(defined_.native_files, error)) return false;
  if (!defined_.processes.empty() && !writer->add_processes(defined_.processes, error)) return false;
  if (!defined_.thread_processes.empty() && !writer->add_thread_processes(defined_.thread_processes, error))
    return false;
  file.writer.emplace(std::move(*writer));
  file.path = path;
  file.start_ns = clock.start_monotonic_ns;
  file.first_event = events_;
  file.first_sample = samples_;
  file.counters_at_open = counters_now;
  return true;
}

uint64_t RecordOutputs::bytes_written(Output output) const {
  return files_[output].writer ? files_[output].writer->bytes_written() : 0;
}

bool RecordOutputs::close(Output output, const RecordStats& stats, uint64_t end_monotonic_ns,
                          std::string* error) {
  File& file = files_[output];
  if (!file.writer) return true;
  RecordWriter writer = std::move(*file.writer);
  file.writer.reset();
  RecordStats own = stats;
  // After a full disk, the events buffered then are not in the file.
  own.events_recorded = writer.disk_full() ? writer.events_written() : file.events;
  const RecordStats& at_open = file.counters_at_open;
  own.events_lost -= std::min(own.events_lost, at_open.events_lost);
  own.mem_events_lost -= std::min(own.mem_events_lost, at_open.mem_events_lost);
  own.samples_lost -= std::min(own.samples_lost, at_open.samples_lost);
  if (defined_.cuda_runtime && !writer.set_cuda_runtime(*defined_.cuda_runtime, error)) return false;
  if (defined_.cupti_shim && !writer.set_cupti_shim(*defined_.cupti_shim, error)) return false;
  if (!writer.set_thread_names(defined_.thread_names, error)) return false;
  return writer.finish(own, end_monotonic_ns, error);
}

std::optional<uint32_t> RecordOutputs::add_op(const OpInfo& op, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_ops({op}, &err); })) return std::nullopt;
  defined_.ops.push_back(op);
  return static_cast<uint32_t>(defined_.ops.size() - 1);
}

bool RecordOutputs::add_ops(const std::vector<OpInfo>& ops, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_ops(ops, &err); })) return false;
  defined_.ops.insert(defined_.ops.end(), ops.begin(), ops.end());
  return true;
}

bool RecordOutputs::add_processes(const std::vector<ProcessInfo>& processes, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_processes(processes, &err); }))
    return false;
  for (const ProcessInfo& process : processes) {
    std::erase_if(defined_.processes, [&](const ProcessInfo& p) { return p.pid == process.pid; });
    defined_.processes.push_back(process);
  }
  return true;
}

template <typename T>
bool RecordOutputs::add_everywhere(bool (RecordWriter::*add)(const std::vector<T>&, std::string*),
                                   const std::vector<T>& items, std::vector<T>& defined, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return (*f.writer.*add)(items, &err); })) return false;
  defined.insert(defined.end(), items.begin(), items.end());
  return true;
}

bool RecordOutputs::add_thread_processes(const std::vector<ThreadProcess>& threads, std::string* error) {
  return add_everywhere(&RecordWriter::add_thread_processes, threads, defined_.thread_processes, error);
}

bool RecordOutputs::add_native_files(const std::vector<NativeFile>& files, std::string* error) {
  return add_everywhere(&RecordWriter::add_native_files, files, defined_.native_files, error);
}

void RecordOutputs::forget_process(uint32_t pid) {
  std::erase_if(defined_.native_files, [&](const NativeFile& f) { return static_cast<uint32_t>(f.pid) == pid; });
  std::erase_if(defined_.processes, [&](const ProcessInfo& p) { return static_cast<uint32_t>(p.pid) == pid; });
  std::erase_if(defined_.thread_processes, [&](const ThreadProcess& t) { return t.pid == pid; });
  std::erase_if(defined_.job_ranks, [&](const JobRank& r) { return static_cast<uint32_t>(r.pid) == pid; });
}

bool RecordOutputs::add_module_names(const std::vector<ModuleName>& names, std::string* error) {
  return add_everywhere(&RecordWriter::add_module_names, names, defined_.module_names, error);
}

bool RecordOutputs::add_job_ranks(const std::vector<JobRank>& ranks, std::string* error) {
  return add_everywhere(&RecordWriter::add_job_ranks, ranks, defined_.job_ranks, error);
}

bool RecordOutputs::set_probe_costs(const ProbeCosts& costs, std::string* error) {
  defined_.probe_costs = costs;  // the latest, for a file opened later
  return each(error, [&](File& f, std::string& err) { return f.writer->set_probe_costs(costs, &err); });
}

bool RecordOutputs::append_events(const gp_event* events, size_t count, std::string* error) {
  const bool ok = each(error, [&](File& f, std::string& err) {
    if (!f.writer->append_events(events, count, &err)) return false;
    f.events += count;
    return true;
  });
  events_ += count;
  return ok;
}

bool RecordOutputs::append_shapes(uint64_t event_index, const InputShapes& shapes, std::string* error) {
  return each(error, [&](File& f, std::string& err) {
    return event_index < f.first_event || f.writer->append_shapes(event_index - f.first_event, shapes, &err);
  });
}

bool RecordOutputs::append_mem_events(const gp_mem_event* events, size_t count, std::string* error) {
  return each(error, [&](File& f, std::string& err) { return f.writer->append_mem_events(events, count, &err); });
}

bool RecordOutputs::add_sample_frame(const std::string& name, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_sample_frame(name, &err); }))
    return false;
  defined_.sample_frames.push_back(name);
  return true;
}

bool RecordOutputs::add_sample_stack(const std::vector<uint32_t>& frame_ids, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_sample_stack(frame_ids, &err); }))
    return false;
  defined_.sample_stacks.push_back(frame_ids);
  return true;
}

bool RecordOutputs::append_samples(const CpuSample* samples, size_t count, std::string* error) {
  const bool ok =
      each(error, [&](File& f, std::string& err) { return f.writer->append_samples(samples, count, &err); });
  samples_ += count;
  return ok;
}

bool RecordOutputs::append_entry_stack(uint64_t event_index, uint32_t stack_id, std::string* error) {
  return each(error, [&](File& f, std::string& err) {
    return event_index < f.first_event || f.writer->append_entry_stack(event_index - f.first_event, stack_id, &err);
  });
}

bool RecordOutputs::append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id, std::string* error) {
  return each(error, [&](File& f, std::string& err) {
    return sample_index < f.first_sample ||
           f.writer->append_sample_kernel_stack(sample_index - f.first_sample, stack_id, &err);
  });
}

bool RecordOutputs::add_launch_name(const std::string& name, std::string* error) {
  if (!each(error, [&](File& f, std::string& err) { return f.writer->add_launch_name(name, &err); }))
    return false;
  defined_.launch_names.push_back(name);
  return true;
}

bool RecordOutputs::append_launches(const CudaLaunch* launches, size_t count, std::string* error) {
  return each(error, [&](File& f, std::string& err) { return f.writer->append_launches(launches, count, &err); });
}

bool RecordOutputs::append_gpu_correlations(const GpuCorrelation* correlations, size_t count, std::string* error) {
  return each(error,
              [&](File& f, std::string& err) { return f.writer->append_gpu_correlations(correlations, count, &err); });
}

bool RecordOutputs::append_gpu_activities(const GpuActivity* activities, size_t count, std::string* error) {
  return each(error,
              [&](File& f, std::string& err) { return f.writer->append_gpu_activities(activities, count, &err); });
}

bool RecordOutputs::flush(std::string* error) {
  return each(error, [&](File& f, std::string& err) { return f.writer->flush(&err); });
}

}  // namespace gpuprof
