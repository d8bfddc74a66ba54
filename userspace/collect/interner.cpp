#include "collect/interner.h"

namespace gpuprof {

std::optional<uint32_t> Interner::frame(const std::string& name) {
  auto [it, inserted] = frame_ids_.try_emplace(name, sink_.sample_frames_defined());
  if (inserted) {
    std::string err;
    if (!sink_.add_sample_frame(name, &err)) {
      frame_ids_.erase(it);
      diagnostics_.write_failed(err);
      return std::nullopt;
    }
    if (on_frame_) on_frame_(it->second, name);
  }
  return it->second;
}

std::optional<uint32_t> Interner::stack(const std::vector<uint32_t>& frame_ids) {
  auto [it, inserted] = stack_ids_.try_emplace(frame_ids, sink_.sample_stacks_defined());
  if (inserted) {
    std::string err;
    if (!sink_.add_sample_stack(frame_ids, &err)) {
      stack_ids_.erase(it);
      diagnostics_.write_failed(err);
      return std::nullopt;
    }
  }
  return it->second;
}

std::optional<uint32_t> Interner::stack_of_names(const std::vector<std::string>& frames_outermost_first) {
  std::vector<uint32_t> ids;
  ids.reserve(frames_outermost_first.size());
  for (const std::string& name : frames_outermost_first) {
    auto id = frame(name);
    if (!id) return std::nullopt;
    ids.push_back(*id);
  }
  return stack(ids);
}

uint32_t Interner::launch_name(const std::string& name) {
  auto [it, inserted] = launch_name_ids_.try_emplace(name, sink_.launch_names_defined());
  std::string err;
  if (inserted && !sink_.add_launch_name(name, &err)) diagnostics_.write_failed(err);
  return it->second;
}

}  // namespace gpuprof
