// streamed_launch_table.cpp: report --launches as the events and launches
// stream by (streamed_launch_table.h).
#include "output/streamed_launch_table.h"

namespace gpuprof {

StreamedLaunchTable::StreamedLaunchTable(const Recording& first_head, JoinBounds bounds,
                                         std::optional<CuptiNames> cupti_names)
    : needs_cupti_names_(needs_cupti_names(first_head, bounds)),
      bounds_(std::move(bounds)),
      launch_names_(first_head.launch_names),
      gpu_activities_(gpu_activities_read(first_head) > 0),
      cupti_names_(std::move(cupti_names)) {}

bool StreamedLaunchTable::needs_cupti_names(const Recording& first_head, const JoinBounds& bounds) {
  if (gpu_activities_read(first_head) == 0) return false;
  for (uint32_t name_id : bounds.kernel_launch_names)
    if (may_take_cupti_name(first_head.launch_names, CudaLaunch{.api = GP_LAUNCH_KERNEL, .name_id = name_id}))
      return true;
  return false;
}

bool StreamedLaunchTable::wants(const Recording& head) {
  if (needs_cupti_names_ && !cupti_names_) return false;
  // Each launch a moment of its thread, as the shim's launches are for
  // --kernels: the LAUNCHES chunks' bounds in place of GPU_CORRELATIONS'.
  // Raw times (nullptr: no compensation), as summarize_launches' timeline.
  JoinBounds join{.gpu_correlation_ts = std::move(bounds_.launch_ts), .op_threads = std::move(bounds_.op_threads)};
  figures_.emplace(nullptr, head.ops, /*memory=*/false, /*gpu=*/false, std::move(join),
                   [](const Timeline&, const CallFigures&) {});
  figures_->on_launch_joined([this](uint64_t launch, std::optional<uint32_t> op_id) { charge(launch, op_id); });
  return true;
}

bool StreamedLaunchTable::on_launches(std::span<const CudaLaunch> launches) {
  if (gpu_activities_)
    for (size_t i = 0; i < launches.size(); i++) {
      const CudaLaunch& l = launches[i];
      if (l.api != GP_LAUNCH_KERNEL && l.api != GP_LAUNCH_KERNEL_EXC) continue;
      if (l.name_id >= launch_names_.size()) return false;  // a name the first read did not see
      if (may_take_cupti_name(launch_names_, l) && !(cupti_names_ && next_launch_ + i < cupti_names_->size()))
        return false;
    }
  std::vector<GpuCorrelation> moments;
  moments.reserve(launches.size());
  for (const CudaLaunch& l : launches) {
    CudaLaunch named = l;
    if (cupti_names_ && next_launch_ < cupti_names_->size())
      if (const std::optional<uint32_t> name = cupti_names_->name_of(next_launch_)) {
        named.name_id = *name;
        named_by_cupti_++;
      }
    waiting_.emplace(next_launch_, named);
    moments.push_back({.ts_ns = l.ts_ns, .correlation_id = next_launch_++, .tid = l.tid});
  }
  figures_->add_gpu_correlations(moments);  // one chunk's: its bound is read
  return true;
}

void StreamedLaunchTable::charge(uint64_t launch, std::optional<uint32_t> op_id) {
  auto it = waiting_.find(launch);
  if (it == waiting_.end()) return;
  const CudaLaunch& l = it->second;
  charged_[{op_id, l.name_id, l.api}].add(l);
  waiting_.erase(it);
}

LaunchSummary StreamedLaunchTable::finish(const Recording& recording) && {
  std::move(*figures_).finish(recording.ops);
  LaunchSummary out = launch_summary_of(recording);
  out.named_by_cupti = named_by_cupti_;
  LaunchRows rows;
  for (const auto& [key, count] : charged_) {
    const auto& [op_id, name_id, api] = key;
    if (!op_id) out.outside_ops += count.n;
    out.launches += count.n;
    rows.row(op_id ? op_display_name(recording.ops, *op_id) : std::string(kNoOpName),
             launch_kernel_name(recording, name_id), api)
        .add(count);
  }
  out.rows = rows.sorted();
  return out;
}

}  // namespace gpuprof
