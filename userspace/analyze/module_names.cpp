// module_names.cpp: module frames' names (module_names.h).
#include "analyze/module_names.h"

namespace gpuprof {
namespace {

// "ResNet_0" -> "ResNet": the class of torch's instance label.
std::string class_of(const std::string& label) {
  const size_t underscore = label.rfind('_');
  return underscore == std::string::npos ? label : label.substr(0, underscore);
}

}  // namespace

ModuleNames::ModuleNames(const Recording& r) : r_(r) { reread(); }

void ModuleNames::reread() {
  for (const ModuleName& m : r_.module_names) names_[{m.parent_frame, m.frame}] = {m.name, m.position};
  module_frame_.resize(r_.sample_frames.size(), false);
  for (size_t f = 0; f < r_.sample_frames.size(); f++)
    module_frame_[f] = r_.sample_frames[f].starts_with(kModuleFramePrefix);
}

std::string ModuleNames::label(uint32_t frame) const {
  return r_.sample_frames[frame].substr(kModuleFramePrefix.size());
}

std::pair<std::string, uint32_t> ModuleNames::name(uint32_t parent_frame, uint32_t frame) const {
  if (auto it = names_.find({parent_frame, frame}); it != names_.end()) return it->second;
  const std::string l = label(frame);
  return {parent_frame == kNoModuleFrame ? class_of(l) : l, kNoPosition};
}

}  // namespace gpuprof
