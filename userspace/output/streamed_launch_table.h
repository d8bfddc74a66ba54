// streamed_launch_table.h: report --launches (launch_table.h) of a
// recording read as a stream (record/record_stream.h): each CUDA launch
// counted under the op of the innermost call running at it on its thread,
// joined as --kernels joins the CUPTI shim's launches (analyze/
// streamed_call_figures.h, each launch a moment of its thread, decided once
// its thread's calls around it have settled and no unread LAUNCHES chunk
// can hold an earlier launch). Memory grows with the rows, the open calls
// and how far the launches lag their events, not with the events; the
// summary is summarize_launches()'s for the same recording.
//
// With GPU activities (the CUPTI shim's), the launches the probes could
// not name take the name CUPTI gave their kernel, a join of every launch
// of a thread with its CUPTI correlations (launch_table.cpp): the first
// read notes the names of the runtime launches; when one may take a name
// (needs_cupti_names), a read of the launches and GPU records alone names
// them through external sorts (sorted_launch_names.h: memory for the
// sorts' runs, not for the launches or the records), and this stream
// charges each launch under its name, read back by its place in the file. Without such a launch the GPU
// records are dropped. A
// record -a recording streams like any other (a launch is a moment of its
// thread, whatever its process), and so do some of its processes, through
// analyze/chosen_processes_stream.h. Allocator events are dropped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyze/streamed_call_figures.h"
#include "output/launch_table.h"
#include "output/sorted_launch_names.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedLaunchTable : public RecordStream {
 public:
  // CUPTI's names of a recording's launches, read in file order
  // (sorted_launch_names.h).
  using CuptiNames = LaunchNamesInOrder;
  // first_head, bounds: the first read's (JoinBounds, with launch_ts and
  // kernel_launch_names); cupti_names: the names of the file's launches,
  // for a recording that needs_cupti_names (nullopt: read whole then).
  StreamedLaunchTable(const Recording& first_head, JoinBounds bounds,
                      std::optional<CuptiNames> cupti_names = std::nullopt);
  // Whether a launch of the recording may take a CUPTI name (its first
  // read's head and bounds).
  static bool needs_cupti_names(const Recording& first_head, const JoinBounds& bounds);

  // False (read whole) when a runtime launch may take a CUPTI name that
  // this stream was not given.
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override { figures_->add_events(events, first); }
  // False (read whole) for a launch that may take a CUPTI name the names
  // given do not cover (a recording still being written).
  bool on_launches(std::span<const CudaLaunch> launches) override;
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }  // dropped: no launch needs them
  // Dropped when the first read saw GPU activities and no launch that could
  // take a name from them; else (activities the first read did not see)
  // the recording is read whole.
  bool on_gpu_activities(std::span<const GpuActivity>) override { return gpu_activities_; }
  // The summary, once the read is done (recording: what it returned).
  LaunchSummary finish(const Recording& recording) &&;

 private:
  void charge(uint64_t launch, std::optional<uint32_t> op_id);

  bool needs_cupti_names_ = false;  // the first read's answer (needs_cupti_names)
  JoinBounds bounds_;
  std::vector<std::string> launch_names_;  // the first read's
  bool gpu_activities_ = false;            // the first read saw some
  std::optional<CuptiNames> cupti_names_;
  uint64_t named_by_cupti_ = 0;
  std::optional<StreamedCallFigures> figures_;
  uint64_t next_launch_ = 0;  // the file-order index of the next launch read
  // Launches read whose call is not decided yet, by index.
  std::unordered_map<uint64_t, CudaLaunch> waiting_;
  // Charged: by (op id, or nullopt outside every op; name id; api); op and
  // kernel names are known at the end.
  std::map<std::tuple<std::optional<uint32_t>, uint32_t, uint16_t>, LaunchCount> charged_;
};

}  // namespace gpuprof
