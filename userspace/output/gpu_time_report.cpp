#include "output/gpu_time_report.h"

#include <algorithm>
#include <cstdio>

#include "base/text_table.h"
#include "output/op_table.h"
#include "output/row_limit.h"

namespace gpuprof {
namespace {

std::string percent(uint64_t part, uint64_t whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", whole ? 100.0 * static_cast<double>(part) / whole : 0.0);
  return text;
}

std::string time_of(uint64_t ns) { return format_time_us(ns / 1e3); }

// rows_left_out()'s line, when rows were cut.
std::string more_rows(size_t rows, size_t shown) { return shown < rows ? rows_left_out(rows, shown) + "\n" : ""; }

std::string format_device(const GpuDeviceTime& d, int row_limit) {
  const uint64_t window = d.window_ns();
  const uint64_t idle = window - d.busy_ns;
  std::string out = "GPU " + std::to_string(d.device) + ": " + std::to_string(d.activities) + " activities over " +
                    time_of(window) + " (from its first activity's start to its last one's end)\n";
  out += "  busy " + percent(d.busy_ns, window) + " (" + time_of(d.busy_ns) + "), idle " + percent(idle, window) +
         " (" + time_of(idle) + ", " + std::to_string(d.idle_gaps) + " gaps)\n";
  out += "  idle: host wait " + percent(d.host_wait_ns, window) + " (" + time_of(d.host_wait_ns) +
         ": nothing queued, the CPU launched late), queued " + percent(d.queued_ns, window) + " (" +
         time_of(d.queued_ns) + ": launched, not started)";
  if (d.launch_not_seen_ns)
    out += ", launch not seen " + percent(d.launch_not_seen_ns, window) + " (" + time_of(d.launch_not_seen_ns) + ")";
  out += "\n";
  const GpuTimeByCategory& c = d.by_category;
  out += "  time: compute " + percent(c.compute_ns, window) + " (" + time_of(c.compute_ns) + "), communication " +
         percent(c.communication_ns, window) + " (" + time_of(c.communication_ns) + "), memcpy " +
         percent(c.memcpy_ns, window) + " (" + time_of(c.memcpy_ns) + "), memset " + percent(c.memset_ns, window) +
         " (" + time_of(c.memset_ns) + ") of the window\n";
  if (c.communication_ns)
    out += "  compute/communication overlap: " + percent(d.overlap_ns, c.communication_ns) +
           " of communication time (" + time_of(d.overlap_ns) + ")\n";
  if (d.queue_delays.count)
    out += "  queue delay, launch to start (" + std::to_string(d.queue_delays.count) +
           " activities whose launch was seen): p50 " + time_of(d.queue_delays.p50_ns) + ", p90 " +
           time_of(d.queue_delays.p90_ns) + ", p99 " + time_of(d.queue_delays.p99_ns) + ", max " +
           time_of(d.queue_delays.max_ns) + "\n";
  else
    out += "  queue delay: no activity's launch was seen\n";

  std::vector<std::vector<std::string>> streams = {
      {"Stream", "Activities", "Busy", "Busy %", "Compute", "Communication", "Memcpy", "Memset"}};
  for (const GpuStreamTime& s : d.streams)
    streams.push_back({std::to_string(s.stream), std::to_string(s.activities), time_of(s.busy_ns),
                       percent(s.busy_ns, window), time_of(s.by_category.compute_ns),
                       time_of(s.by_category.communication_ns), time_of(s.by_category.memcpy_ns),
                       time_of(s.by_category.memset_ns)});
  out += "\n" + format_text_table(streams, 7);

  if (!d.host_waits.empty()) {
    out += "\nHost waits of GPU " + std::to_string(d.device) +
           ", by what the launching thread ran when the GPU ran dry:\n";
    const size_t shown = rows_shown(d.host_waits.size(), row_limit);
    std::vector<std::vector<std::string>> waits = {{"Operator", "Python frame", "Gaps", "Host wait", "% of window"}};
    for (size_t i = 0; i < shown; ++i) {
      const GpuHostWait& w = d.host_waits[i];
      waits.push_back({w.op, w.python_frame.empty() ? "-" : w.python_frame, std::to_string(w.gaps),
                       time_of(w.wait_ns), percent(w.wait_ns, window)});
    }
    out += format_text_table(waits, 3) + more_rows(d.host_waits.size(), shown);
  }

  out += "\nKernels of GPU " + std::to_string(d.device) + " by GPU time:\n";
  const size_t shown = rows_shown(d.kernels.size(), row_limit);
  std::vector<std::vector<std::string>> kernels = {{"Kernel", "Calls", "GPU total", "GPU avg", "% of busy"}};
  for (size_t i = 0; i < shown; ++i) {
    const GpuKernelTime& k = d.kernels[i];
    kernels.push_back({k.name, std::to_string(k.calls), time_of(k.total_ns),
                       format_time_us(k.total_ns / 1e3 / static_cast<double>(k.calls)), percent(k.total_ns, d.busy_ns)});
  }
  out += format_text_table(kernels, 4) + more_rows(d.kernels.size(), shown);
  return out;
}

}  // namespace

std::string format_gpu_time_report(const std::vector<GpuDeviceTime>& devices, const CuptiShimInfo& shim,
                                   int row_limit) {
  std::string out;
  for (const GpuDeviceTime& d : devices) out += (out.empty() ? "" : "\n") + format_device(d, row_limit);
  if (devices.empty()) out = "No GPU activities were recorded (the shim was loaded, the job ran no GPU work).\n";
  out += format_gpu_record_warnings(shim);
  return out;
}

}  // namespace gpuprof
