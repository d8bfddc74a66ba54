// pprof.cpp: stack sums (analyze/stack_sums.h) as a profile.proto message.
#include "output/pprof.h"

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/process_filter.h"
#include "analyze/stack_sums.h"
#include "output/protobuf_writer.h"

namespace gpuprof {
namespace {

// profile.proto's field numbers (github.com/google/pprof, proto/profile.proto).
namespace field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6, kTimeNanos = 9,
                   kDurationNanos = 10, kPeriodType = 11, kPeriod = 12, kComment = 13, kDefaultSampleType = 14;
constexpr uint32_t kValueTypeType = 1, kValueTypeUnit = 2;
constexpr uint32_t kSampleLocationId = 1, kSampleValue = 2, kSampleLabel = 3;
constexpr uint32_t kLabelKey = 1, kLabelStr = 2, kLabelNum = 3;
constexpr uint32_t kMappingId = 1, kMappingFilename = 5, kMappingBuildId = 6, kMappingHasFunctions = 7;
constexpr uint32_t kLocationId = 1, kLocationMappingId = 2, kLocationAddress = 3, kLocationLine = 4;
constexpr uint32_t kLineFunctionId = 1, kLineLine = 2;
constexpr uint32_t kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3, kFunctionFilename = 4;
}  // namespace field

// A Python frame as torch names it: "path(line): name".
struct PythonFrame {
  std::string_view file, name;
  int64_t line = 0;
};
std::optional<PythonFrame> parse_python_frame(std::string_view text) {
  const size_t colon = text.find("): ");
  if (colon == std::string_view::npos) return std::nullopt;
  const size_t open = text.rfind('(', colon);
  if (open == std::string_view::npos || open + 1 == colon) return std::nullopt;
  int64_t line = 0;
  bool negative = false;
  for (size_t i = open + 1; i < colon; i++) {
    const char c = text[i];
    if (c == '-' && i == open + 1) {
      negative = true;
    } else if (c >= '0' && c <= '9') {
      line = line * 10 + (c - '0');
    } else {
      return std::nullopt;
    }
  }
  return PythonFrame{text.substr(0, open), text.substr(colon + 3), negative ? -line : line};
}

// A native leaf as the recording names it: "libblas.so.3!sgemm_" (its
// file and symbol) or "libc.so.6+0x98109" (its file and the offset in it,
// when no symbol covers it); anything else is a name alone.
struct NativeFrame {
  std::string_view file, symbol;
  uint64_t offset = 0;
};
std::optional<NativeFrame> parse_native_frame(std::string_view text) {
  if (size_t bang = text.find('!'); bang != std::string_view::npos && bang > 0)
    return NativeFrame{text.substr(0, bang), text.substr(bang + 1), 0};
  const size_t plus = text.rfind("+0x");
  if (plus == std::string_view::npos || plus == 0 || plus + 3 == text.size()) return std::nullopt;
  uint64_t offset = 0;
  for (char c : text.substr(plus + 3)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    offset = offset * 16 + static_cast<uint64_t>(digit);
  }
  return NativeFrame{text.substr(0, plus), "", offset};
}

class ProfileBuilder {
 public:
  // The columns, in the order of sample_type.
  enum Column { kCalls, kSelfCpu, kSamples, kCpu, kGpu, kColumns };

  explicit ProfileBuilder(const std::vector<PprofInput>& inputs) {
    strings_.push_back("");
    string_ids_[""] = 0;
    bool wanted[kColumns] = {};
    for (const PprofInput& in : inputs) {
      const Recording& r = *in.recording;
      wanted[kCalls] = wanted[kSelfCpu] = wanted[kCalls] || r.options.ops;
      wanted[kSamples] = wanted[kCpu] = wanted[kSamples] || r.options.sample_hz > 0;
      wanted[kGpu] = wanted[kGpu] || gpu_activities_read(r) > 0;
      if (!period_ns_ && r.options.sample_hz > 0) period_ns_ = static_cast<int64_t>(1e9 / r.options.sample_hz);
    }
    const char* types[kColumns][2] = {{"calls", "count"}, {"self_cpu", "nanoseconds"}, {"samples", "count"},
                                      {"cpu", "nanoseconds"}, {"gpu", "nanoseconds"}};
    for (int c = 0; c < kColumns; c++) {
      if (!wanted[c]) continue;
      index_of_[c] = static_cast<int>(columns_.size());
      columns_.push_back({str(types[c][0]), str(types[c][1])});
    }
    // pprof shows its first mapping as the profile's program ("File:"): the
    // traced command, not whichever library a first sample landed in.
    const Recording& first = *inputs.front().recording;
    const std::string& cmdline = first.process.cmdline;
    mapping_of(inputs.size() > 1 || is_system_wide(first) ? "[several processes]"
               : cmdline.empty()                          ? first.process.comm
                                                          : cmdline.substr(0, cmdline.find(' ')));
  }

  bool has(Column c) const { return index_of_[c] >= 0; }

  // Adds one process's stacks of `metric` into its column(s); samples are
  // worth period_ns of CPU each.
  void add(const StackSums& sums, StackMetric metric, uint32_t process, int64_t period_ns = 0) {
    constexpr uint32_t kUnseen = UINT32_MAX;
    std::vector<uint32_t> frame_of(sums.frames.size(), kUnseen);  // the builder's frame ids
    for (const StackSum& stack : sums.stacks) {
      if (stack.value == 0) continue;
      std::vector<uint32_t> leaf_first;
      leaf_first.reserve(stack.frames.size());
      for (auto it = stack.frames.rbegin(); it != stack.frames.rend(); ++it) {
        if (frame_of[*it] == kUnseen) frame_of[*it] = frame_id(sums.frames[*it], process);
        leaf_first.push_back(frame_of[*it]);
      }
      std::vector<int64_t>& values = stacks_[{std::move(leaf_first), process}];
      values.resize(columns_.size());
      const auto v = static_cast<int64_t>(stack.value);
      switch (metric) {
        case StackMetric::kCalls: values[index_of_[kCalls]] += v; break;
        case StackMetric::kSelfCpuTime: values[index_of_[kSelfCpu]] += v; break;
        case StackMetric::kSamples:
          values[index_of_[kSamples]] += v;
          values[index_of_[kCpu]] += v * period_ns;
          break;
        case StackMetric::kSelfCudaTime: values[index_of_[kGpu]] += v; break;
      }
    }
  }

  // The labels of one process's samples (and of its file, with several).
  // A job rank's numbers are labels as known (rank, local_rank, world_size),
  // for a label query that picks one rank.
  // native_files: the recording's NATIVE_FILES entries (those of other
  // processes are passed over).
  uint32_t process(const ProcessInfo& info, const std::string& file, const JobRank* rank,
                   const std::vector<NativeFile>& native_files) {
    std::vector<Label> labels = {{"pid", std::nullopt, info.pid}, {"comm", info.comm, 0}, {"hostname", info.hostname, 0}};
    if (!file.empty()) labels.push_back({"recording", file, 0});
    if (rank) {
      labels.push_back({"rank", std::nullopt, rank->rank});
      if (rank->local_rank) labels.push_back({"local_rank", std::nullopt, *rank->local_rank});
      if (rank->world_size) labels.push_back({"world_size", std::nullopt, *rank->world_size});
    }
    processes_.push_back(std::move(labels));
    process_info_.push_back(info);
    // By base name, as the frames name them; the latest entry of a name wins.
    std::unordered_map<std::string, NativeFile>& files = native_files_.emplace_back();
    for (const NativeFile& f : native_files)
      if (f.pid == info.pid) files[f.path.substr(f.path.rfind('/') + 1)] = f;
    return static_cast<uint32_t>(processes_.size() - 1);
  }

  PprofProfile finish(const Recording& first, const std::string& comment) {
    number_locations();
    ProtobufWriter profile;
    for (const auto& [type, unit] : columns_) {
      ProtobufWriter vt;
      vt.signed_varint(field::kValueTypeType, type);
      vt.signed_varint(field::kValueTypeUnit, unit);
      profile.message(field::kSampleType, vt);
    }
    for (const auto& [key, values] : samples_) {
      ProtobufWriter s;
      s.packed(field::kSampleLocationId, key.first);
      s.packed(field::kSampleValue, values);
      for (const Label& label : processes_[key.second]) {
        ProtobufWriter l;
        l.signed_varint(field::kLabelKey, str(label.key));
        if (label.text) {
          l.signed_varint(field::kLabelStr, str(*label.text));
        } else {
          l.signed_varint(field::kLabelNum, label.number);
        }
        s.message(field::kSampleLabel, l);
      }
      profile.message(field::kSample, s);
    }
    uint64_t mapping_id = 0;
    for (const auto& [file, build_id] : mappings_) {
      ProtobufWriter m;
      m.varint(field::kMappingId, ++mapping_id);
      m.signed_varint(field::kMappingFilename, file);
      if (build_id) m.signed_varint(field::kMappingBuildId, build_id);  // string 0, "": none
      m.varint(field::kMappingHasFunctions, 1);
      profile.message(field::kMapping, m);
    }
    for (size_t i = 0; i < locations_.size(); i++) {
      ProtobufWriter loc, line;
      loc.varint(field::kLocationId, i + 1);
      loc.varint(field::kLocationMappingId, locations_[i].mapping);
      loc.varint(field::kLocationAddress, locations_[i].address);
      line.varint(field::kLineFunctionId, locations_[i].function);
      line.signed_varint(field::kLineLine, locations_[i].line);
      loc.message(field::kLocationLine, line);
      profile.message(field::kLocation, loc);
    }
    for (size_t i = 0; i < functions_.size(); i++) {
      ProtobufWriter fn;
      fn.varint(field::kFunctionId, i + 1);
      fn.signed_varint(field::kFunctionName, functions_[i].name);
      fn.signed_varint(field::kFunctionSystemName, functions_[i].system_name);
      fn.signed_varint(field::kFunctionFilename, functions_[i].filename);
      profile.message(field::kFunction, fn);
    }
    const int64_t comment_id = str(comment);
    const int64_t default_type = has(kSelfCpu) ? columns_[index_of_[kSelfCpu]].first
                                 : has(kCpu)   ? columns_[index_of_[kCpu]].first
                                               : 0;
    const int64_t cpu = str("cpu"), nanoseconds = str("nanoseconds");
    // The string table last: every str() above has been made.
    for (const std::string& s : strings_) profile.string_always(field::kStringTable, s);
    profile.signed_varint(field::kTimeNanos, static_cast<int64_t>(first.clock.start_realtime_ns));
    if (first.clock.end_monotonic_ns > first.clock.start_monotonic_ns)
      profile.signed_varint(field::kDurationNanos,
                            static_cast<int64_t>(first.clock.end_monotonic_ns - first.clock.start_monotonic_ns));
    if (period_ns_) {
      ProtobufWriter vt;
      vt.signed_varint(field::kValueTypeType, cpu);
      vt.signed_varint(field::kValueTypeUnit, nanoseconds);
      profile.message(field::kPeriodType, vt);
      profile.signed_varint(field::kPeriod, period_ns_);
    }
    profile.packed(field::kComment, std::vector<int64_t>{comment_id});
    profile.signed_varint(field::kDefaultSampleType, default_type);
    PprofProfile out;
    out.data = profile.data();
    out.stats = {.samples = samples_.size(), .functions = functions_.size(), .sample_types = columns_.size()};
    return out;
  }

 private:
  struct Label {
    std::string key;
    std::optional<std::string> text;  // a string label, or
    int64_t number = 0;               // a numeric one
  };
  struct Function {
    int64_t name, system_name, filename;
  };
  struct Location {
    uint64_t function;
    int64_t line;
    uint64_t mapping = 0;  // 0: none
    uint64_t address = 0;  // a native frame's offset in its file, when the recording has it
  };

  // A frame of one process's stacks: its location is made by finish().
  struct ProcessFrame {
    uint32_t process;
    FrameKind kind;
    std::string name;
    auto operator<=>(const ProcessFrame&) const = default;
  };

  uint32_t frame_id(const StackFrame& frame, uint32_t process) {
    auto [it, inserted] =
        frame_ids_.try_emplace({process, frame.kind, frame.name}, static_cast<uint32_t>(frame_ids_.size()));
    return it->second;
  }

  // Every frame's location, in the frames' order (process, kind, name):
  // the ids of locations, functions, mappings and strings do not depend on
  // the order the stack sums met the frames in, which a streamed read's
  // (each thread's calls placed as they settle) differs from a whole one's.
  // Then the samples, by their locations: stacks whose frames make the
  // same locations (an op and a Python frame of one name make one) make
  // one sample.
  void number_locations() {
    std::vector<uint64_t> location_of(frame_ids_.size());
    for (const auto& [frame, id] : frame_ids_)  // in the map's order
      location_of[id] = location(StackFrame{frame.name, frame.kind}, frame.process);
    for (const auto& [key, values] : stacks_) {
      std::vector<uint64_t> leaf_first;
      leaf_first.reserve(key.first.size());
      for (uint32_t f : key.first) leaf_first.push_back(location_of[f]);
      std::vector<int64_t>& sample = samples_[{std::move(leaf_first), key.second}];
      sample.resize(values.size());
      for (size_t c = 0; c < values.size(); c++) sample[c] += values[c];
    }
    stacks_.clear();
  }

  int64_t str(std::string_view s) {
    auto [it, inserted] = string_ids_.try_emplace(std::string(s), static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(std::string(s));
    return it->second;
  }

  // The location of a frame: one per frame (its function, line, mapping
  // and address). A native frame is in its file's mapping, named by the
  // file's path with its GNU build id where the recording has them
  // (NATIVE_FILES); in a file from before them, the process's libtorch_cpu
  // alone is (PROCESS), other files are known by name only.
  uint64_t location(const StackFrame& frame, uint32_t process_index) {
    const ProcessInfo& process = process_info_[process_index];
    std::string_view name = frame.name, file;
    int64_t line = 0;
    uint64_t mapping = 0, address = 0;
    if (frame.kind == FrameKind::kPython) {
      if (auto python = parse_python_frame(frame.name)) {
        name = python->name;
        file = python->file;
        line = python->line;
      }
    } else if (frame.kind == FrameKind::kNative) {
      if (auto native = parse_native_frame(frame.name)) {
        if (!native->symbol.empty()) name = native->symbol;
        const std::string_view libtorch = process.libtorch_path;
        const bool in_libtorch = !process.libtorch_build_id.empty() &&
                                 libtorch.substr(libtorch.rfind('/') + 1) == native->file;
        const auto& files = native_files_[process_index];
        if (auto known = files.find(std::string(native->file)); known != files.end())
          mapping = mapping_of(known->second.path, known->second.build_id);
        else
          mapping = in_libtorch ? mapping_of(libtorch, process.libtorch_build_id) : mapping_of(native->file);
        address = native->offset;
      }
    }
    const Function fn{str(name), str(frame.name), str(file)};
    auto [f, new_function] =
        function_ids_.try_emplace(std::make_tuple(fn.name, fn.system_name, fn.filename), functions_.size() + 1);
    if (new_function) functions_.push_back(fn);
    auto [l, new_location] = location_ids_.try_emplace(std::make_tuple(f->second, line, mapping, address),
                                                       locations_.size() + 1);
    if (new_location) locations_.push_back({f->second, line, mapping, address});
    return l->second;
  }

  uint64_t mapping_of(std::string_view file, std::string_view build_id = "") {
    auto [it, inserted] = mapping_ids_.try_emplace({str(file), str(build_id)}, mappings_.size() + 1);
    if (inserted) mappings_.push_back(it->first);
    return it->second;
  }

  std::vector<std::pair<int64_t, int64_t>> columns_;  // (type, unit) string ids
  int index_of_[kColumns] = {-1, -1, -1, -1, -1};
  int64_t period_ns_ = 0;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::vector<Function> functions_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t> function_ids_;
  std::vector<Location> locations_;
  std::map<std::tuple<uint64_t, int64_t, uint64_t, uint64_t>, uint64_t> location_ids_;
  std::vector<std::pair<int64_t, int64_t>> mappings_;  // (file name, build id: 0 for none) string ids
  std::map<std::pair<int64_t, int64_t>, uint64_t> mapping_ids_;
  std::vector<std::vector<Label>> processes_;
  std::vector<ProcessInfo> process_info_;  // by process: its libtorch_cpu's path and build id
  // By process: its native files by base name (the recording's NATIVE_FILES).
  std::vector<std::unordered_map<std::string, NativeFile>> native_files_;
  std::map<ProcessFrame, uint32_t> frame_ids_;
  // (builder's frame ids leaf first, process) -> the columns' values, as added
  std::map<std::pair<std::vector<uint32_t>, uint32_t>, std::vector<int64_t>> stacks_;
  // (location ids leaf first, process) -> the columns' values: the samples
  std::map<std::pair<std::vector<uint64_t>, uint32_t>, std::vector<int64_t>> samples_;
};

int64_t period_ns_of(const Recording& recording) {
  return recording.options.sample_hz > 0 ? static_cast<int64_t>(1e9 / recording.options.sample_hz) : 0;
}

// Adds one process's stacks, each metric's sums from sums_of(metric).
void add_process(ProfileBuilder& builder, const Recording& one, const std::string& file,
                 const std::function<StackSums(StackMetric)>& sums_of) {
  const uint32_t process =
      builder.process(one.process, file, job_rank_of(one.job_ranks, one.process.pid), one.native_files);
  for (StackMetric metric : pprof_metrics(one))
    builder.add(sums_of(metric), metric, process, metric == StackMetric::kSamples ? period_ns_of(one) : 0);
}

std::string comment_of(bool compensated) {
  return compensated ? "gpuprof: self_cpu compensated for the probes' cost (--raw-times: as measured)"
                     : "gpuprof: self_cpu as measured";
}

}  // namespace

std::vector<StackMetric> pprof_metrics(const Recording& recording) {
  std::vector<StackMetric> metrics;
  if (recording.options.ops) {
    metrics.push_back(StackMetric::kCalls);
    metrics.push_back(StackMetric::kSelfCpuTime);
  }
  if (period_ns_of(recording)) metrics.push_back(StackMetric::kSamples);
  if (gpu_activities_read(recording) > 0) metrics.push_back(StackMetric::kSelfCudaTime);
  return metrics;
}

PprofProfile pprof_profile(const Recording& recording, bool raw_times) {
  return pprof_profile(std::vector<PprofInput>{{&recording, ""}}, raw_times);
}

PprofProfile pprof_profile(const Recording& recording, std::map<StackMetric, StackSums> sums, bool raw_times) {
  return pprof_profile(std::vector<PprofInput>{{.recording = &recording, .sums = &sums}}, raw_times);
}

PprofProfile pprof_profile(const Recording& recording, std::map<uint32_t, ProcessMetricSums> processes,
                           bool raw_times) {
  return pprof_profile(std::vector<PprofInput>{{.recording = &recording, .processes = &processes}}, raw_times);
}

PprofProfile pprof_profile(const std::vector<PprofInput>& inputs, bool raw_times) {
  ProfileBuilder builder(inputs);
  bool compensated = true;
  for (const PprofInput& in : inputs) {
    const Recording& recording = *in.recording;
    const std::string file = inputs.size() > 1 ? in.file : "";
    auto add_whole = [&](const Recording& one) {
      add_process(builder, one, file, [&](StackMetric metric) { return stack_sums(one, metric, raw_times); });
    };
    if (in.processes) {
      // By pid, as process_activity() lists them for the whole read.
      for (auto& entry : *in.processes) {
        ProcessMetricSums& one = entry.second;  // by name: clang captures no structured binding
        add_process(builder, *one.selection, file, [&](StackMetric metric) { return std::move(one.sums.at(metric)); });
      }
    } else if (in.sums) {
      add_process(builder, recording, file, [&](StackMetric metric) { return std::move(in.sums->at(metric)); });
    } else if (is_system_wide(recording)) {
      for (const auto& [pid, activity] : process_activity(recording))
        if (activity.events || activity.samples) add_whole(select_processes(recording, {pid}));
    } else {
      add_whole(recording);
    }
    compensated = compensated && compensation_costs(recording, raw_times) != nullptr;
  }
  return builder.finish(*inputs.front().recording, comment_of(compensated));
}

}  // namespace gpuprof
