// live_sample_table.cpp: sample counts by innermost Python frame.
#include "live/live_sample_table.h"

#include <algorithm>

namespace gpuprof {
namespace {

// Keys of native leaves (no Python frame): their frame id with this bit.
constexpr uint32_t kNativeBit = 0x80000000u;

}  // namespace

void LiveSampleTable::frame(uint32_t id, const std::string& name) {
  if (id >= names_.size()) names_.resize(id + 1);
  names_[id] = name;
}

void LiveSampleTable::add(const CpuSample& sample, const std::vector<uint32_t>& python_stack) {
  const uint32_t key = python_stack.empty() ? (sample.frame_id | kNativeBit) : python_stack.back();
  ++current_[key];
}

LiveLines LiveSampleTable::lines_of(const std::unordered_map<uint32_t, uint64_t>& counts,
                                    const std::vector<std::string>& names) {
  LiveLines out;
  for (const auto& [key, n] : counts) {
    const uint32_t id = key & ~kNativeBit;
    const std::string name = id < names.size() ? names[id] : "[frame " + std::to_string(id) + "]";
    out.rows.push_back({key & kNativeBit ? "[" + name + "]" : name, n});
    out.samples += n;
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const LiveLineRow& a, const LiveLineRow& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.line < b.line;
  });
  return out;
}

LiveLines LiveSampleTable::roll(uint64_t now_ns) {
  LiveLines out = lines_of(current_, names_);
  out.start_ns = interval_start_ns_;
  out.end_ns = now_ns;
  for (const auto& [key, n] : current_) total_[key] += n;
  current_.clear();
  interval_start_ns_ = last_roll_ns_ = now_ns;
  return out;
}

LiveLines LiveSampleTable::since_start() const {
  LiveLines out = lines_of(total_, names_);
  out.start_ns = since_ns_;
  out.end_ns = last_roll_ns_;
  return out;
}

}  // namespace gpuprof
