#include "collect/sample_collector.h"

#include <algorithm>
#include <span>

#include "base/bounded_cache.h"

namespace gpuprof {

SampleCollector::SampleCollector(Interner& interner, RecordSink& sink, Diagnostics& diagnostics, RecordStats& stats,
                                 StackCuts& cuts, LiveConsumer& live)
    : interner_(interner),
      sink_(sink),
      diagnostics_(diagnostics),
      stats_(stats),
      cuts_(cuts),
      live_(live),
      kernel_symbols_(KernelSymbols::load()) {}

void SampleCollector::record(const gp_cpu_sample& sample, uint32_t process, const LeafNamer& leaf,
                             PythonStackNamer* python) {
  uint32_t leaf_id;
  const auto address_key = std::make_pair(process, sample.user_ip);
  if (auto known = frame_of_address_.find(address_key); known != frame_of_address_.end()) {
    leaf_id = known->second;
  } else {
    const std::string name = leaf(sample.user_ip);
    auto id = interner_.frame(name);
    if (!id) return;
    leaf_id = *id;
    keep_bounded(frame_of_address_, kAddressCacheEntries);
    frame_of_address_.emplace(address_key, leaf_id);
    if (name == "[unknown]" || name.find("+0x") != std::string::npos) unresolved_frames_.insert(leaf_id);
  }
  if (unresolved_frames_.count(leaf_id)) stats_.symbols_unresolved++;
  uint32_t python_stack = kNoPythonStack;
  const uint32_t depth = std::min<uint32_t>(sample.py_depth, GP_MAX_PY_FRAMES);
  std::vector<uint32_t> stack;
  if (python && depth > 0) {
    // Innermost first in the sample; the record keeps the outermost first.
    auto frame = [&](uint32_t i) -> std::optional<uint32_t> {
      const auto key = std::make_tuple(process, sample.frames[2 * i], sample.frames[2 * i + 1]);
      auto it = frame_of_python_.find(key);
      if (it == frame_of_python_.end()) {
        auto id = interner_.frame(python->frame(std::get<1>(key), std::get<2>(key)));
        if (!id) return std::nullopt;
        keep_bounded(frame_of_python_, kAddressCacheEntries);
        it = frame_of_python_.emplace(key, *id).first;
      }
      return it->second;
    };
    const PythonStackCut cut = PythonStackCut::from_event(sample.py_not_read);
    if (!cut.outermost_first(depth, frame, [&](const std::string& marker) { return interner_.frame(marker); },
                             [&](std::optional<uint32_t> id) {
                               if (id) stack.push_back(*id);
                               return id.has_value();
                             }))
      return;
    cuts_.samples++;
    cuts_.samples_cut += cut.cut();
    auto id = interner_.stack(stack);
    if (!id) return;
    python_stack = *id;
  }
  CpuSample record{.ts_ns = sample.ts_ns, .tid = sample.tid, .frame_id = leaf_id,
                   .in_kernel = sample.in_kernel != 0, .python_stack = python_stack};
  const uint64_t sample_index = sink_.samples_appended();
  if (Result<void> written = sink_.append_samples(&record, 1); !written) {
    diagnostics_.write_failed(written.error());
    return;
  }
  recorded_++;
  live_.sample(record, stack);
  if (!sample.in_kernel || sample.kernel_depth == 0) return;
  // Kernel stacks repeat: each distinct one is named once.
  const uint64_t* ips = reinterpret_cast<const uint64_t*>(&sample.frames[2 * depth]);
  std::vector<uint64_t> key(ips, ips + std::min<uint32_t>(sample.kernel_depth, GP_MAX_KERNEL_FRAMES));
  auto known = stack_of_kernel_ips_.find(key);
  if (known == stack_of_kernel_ips_.end()) {
    std::vector<std::string> frames;
    for (auto ip = key.rbegin(); ip != key.rend(); ++ip) frames.push_back(kernel_symbols_.frame(*ip));
    auto id = interner_.stack_of_names(frames);
    if (!id) return;
    keep_bounded(stack_of_kernel_ips_, kStackCacheEntries);
    known = stack_of_kernel_ips_.emplace(std::move(key), *id).first;
  }
  if (Result<void> written = sink_.append_sample_kernel_stack(sample_index, known->second); !written)
    diagnostics_.write_failed(written.error());
}

void SampleCollector::forget(const std::function<bool(uint32_t process)>& gone) {
  std::erase_if(frame_of_address_, [&](const auto& entry) { return gone(entry.first.first); });
  std::erase_if(frame_of_python_, [&](const auto& entry) { return gone(std::get<0>(entry.first)); });
}

}  // namespace gpuprof
