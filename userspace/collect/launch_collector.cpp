#include "collect/launch_collector.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

namespace gpuprof {
namespace {

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

uint32_t LaunchCollector::name_id(const gp_launch_event& event, uint32_t process, NativeSymbolizer* symbolizer) {
  const auto key = std::make_pair(process, event.api == GP_LAUNCH_GRAPH ? 0 : event.function);
  if (auto it = name_of_function_.find(key); it != name_of_function_.end()) return it->second;
  std::string name;
  const bool driver = event.api == GP_LAUNCH_DRIVER_KERNEL || event.api == GP_LAUNCH_DRIVER_KERNEL_EX;
  if (event.api == GP_LAUNCH_GRAPH) {
    name = "[CUDA graph]";
  } else if (driver) {
    // A CUfunction is a driver handle, not a host symbol: no name without
    // CUPTI (the shim's activity records name the kernel).
    name = "[CUfunction " + hex(event.function) + "]";
  } else if (auto symbol = symbolizer ? symbolizer->function_starting_at(event.function) : std::nullopt) {
    name = *symbol;
  } else {
    name = "[unknown kernel " + hex(event.function) + "]";
  }
  const uint32_t id = interner_.launch_name(name);
  if (name.starts_with("[unknown kernel ")) unresolved_names_.insert(id);
  name_of_function_.emplace(key, id);
  return id;
}

std::optional<CudaLaunch> LaunchCollector::record(const gp_launch_event& event, uint32_t process,
                                                  NativeSymbolizer* symbolizer) {
  CudaLaunch launch;
  launch.ts_ns = event.ts_ns;
  launch.function = event.function;
  launch.stream = event.stream;
  std::copy(std::begin(event.grid), std::end(event.grid), launch.grid);
  std::copy(std::begin(event.block), std::end(event.block), launch.block);
  launch.tid = event.tid;
  launch.api = event.api;
  launch.name_id = name_id(event, process, symbolizer);
  if (count_unresolved_ && unresolved_names_.count(launch.name_id)) stats_.symbols_unresolved++;
  if (!diagnostics_.writing()) return std::nullopt;  // the name's definition failed
  if (Result<void> written = sink_.append_launches(&launch, 1); !written) {
    diagnostics_.write_failed(written.error());
    return std::nullopt;
  }
  recorded_++;
  return launch;
}

void LaunchCollector::forget(const std::function<bool(uint32_t process)>& gone) {
  std::erase_if(name_of_function_, [&](const auto& entry) { return gone(entry.first.first); });
}

}  // namespace gpuprof
