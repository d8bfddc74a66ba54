// stack_groups.cpp: a stack's top N frames, innermost first, interned.
#include "analyze/stack_groups.h"

namespace gpuprof {

StackGroups::StackGroups(const Recording& recording, int n) : recording_(recording), n_(n) {
  frames_.emplace_back();  // kNoStack
  group_of_frames_.emplace(frames_.front(), kNoStack);
  if (n > 0) group_of_stack_.resize(recording.sample_stacks.size());
}

uint32_t StackGroups::of_stack(std::optional<uint32_t> stack_id) {
  // A stack id outside the recording (a damaged file) is no stack, as in
  // the folded stacks.
  if (n_ <= 0 || !stack_id || *stack_id >= group_of_stack_.size()) return kNoStack;
  std::optional<uint32_t>& group = group_of_stack_[*stack_id];
  if (!group) {
    auto [it, inserted] = group_of_frames_.try_emplace(top_frames(*stack_id), frames_.size());
    if (inserted) frames_.push_back(it->first);
    group = it->second;
  }
  return *group;
}

std::vector<std::string> StackGroups::top_frames(uint32_t stack_id) const {
  const std::vector<uint32_t>& outermost_first = recording_.sample_stacks[stack_id];
  const std::vector<std::string>& names = recording_.sample_frames;
  std::vector<std::string> frames;
  for (auto f = outermost_first.rbegin(); f != outermost_first.rend() && frames.size() < static_cast<size_t>(n_);
       ++f)
    frames.push_back(*f < names.size() ? names[*f] : "[unknown]");
  return frames;
}

}  // namespace gpuprof
