// module_names.h: what a module frame of a Python stack ("nn.Module:
// Conv2d_18", torch's instance label) is called in gpuprof's outputs: the
// root module by its class (`ResNet`), a child by its attribute name in its
// parent's _modules (`layer1`, `0`, `conv1`) when the recording holds it
// (Recording::module_names, record --with-modules), else by its label.
// The layer table (module_tree.h) and the folded and pprof stacks
// (stack_sums.h) name modules alike (docs/modules.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

inline constexpr std::string_view kModuleFramePrefix = "nn.Module: ";
inline constexpr uint32_t kNoModuleFrame = UINT32_MAX;  // no parent module: the root
inline constexpr uint32_t kNoPosition = UINT32_MAX;

class ModuleNames {
 public:
  explicit ModuleNames(const Recording& recording);
  // The recording's frames or module names grew (a live recording).
  void reread();

  bool is_module_frame(uint32_t frame) const { return frame < module_frame_.size() && module_frame_[frame]; }
  // torch's label of a module frame: "Conv2d_18".
  std::string label(uint32_t frame) const;
  // Its name under its parent module's frame (kNoModuleFrame for the root),
  // and its place in the parent's _modules (kNoPosition: unknown).
  std::pair<std::string, uint32_t> name(uint32_t parent_frame, uint32_t frame) const;
  // Whether the recording holds attribute names (record --with-modules).
  bool has_attribute_names() const { return !names_.empty(); }

 private:
  const Recording& r_;
  std::map<std::pair<uint32_t, uint32_t>, std::pair<std::string, uint32_t>> names_;  // (parent, frame) -> name, place
  std::vector<bool> module_frame_;  // by frame id
};

}  // namespace gpuprof
