#include "collect/interner.h"

namespace gpuprof {

template <typename Ids, typename Key, typename Define>
std::optional<uint32_t> Interner::intern(Ids& ids, const Key& key, uint32_t next_id, Define define) {
  auto [it, inserted] = ids.try_emplace(key, next_id);
  if (inserted) {
    if (Result<void> defined = define(); !defined) {
      ids.erase(it);
      diagnostics_.write_failed(defined.error());
      return std::nullopt;
    }
  }
  return it->second;
}

std::optional<uint32_t> Interner::frame(const std::string& name) {
  const uint32_t next_id = sink_.sample_frames_defined();
  return intern(frame_ids_, name, next_id, [&]() -> Result<void> {
    RETURN_IF_ERROR(sink_.add_sample_frame(name));
    live_.sample_frame(next_id, name);
    return {};
  });
}

std::optional<uint32_t> Interner::stack(const std::vector<uint32_t>& frame_ids) {
  const uint32_t next_id = sink_.sample_stacks_defined();
  return intern(stack_ids_, frame_ids, next_id, [&]() -> Result<void> {
    RETURN_IF_ERROR(sink_.add_sample_stack(frame_ids));
    live_.sample_stack(next_id, frame_ids);
    return {};
  });
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
  if (inserted)
    if (Result<void> defined = sink_.add_launch_name(name); !defined) diagnostics_.write_failed(defined.error());
  return it->second;
}

}  // namespace gpuprof
