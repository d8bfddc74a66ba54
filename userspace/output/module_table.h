// module_table.h: the module tree (analyze/module_tree.h) as torchprof
// prints it: `Module | Self CPU total | CPU total | Number of Calls`, with
// `Self CUDA total | CUDA total` (the CUPTI shim's records) and `Self CPU
// Mem | CPU Mem` (`| Self CUDA Mem | CUDA Mem`; --profile-memory) before
// the calls when the recording has them, the
// modules drawn as a tree (`├── `, `└── `, one `│` per open ancestor), times
// in torch's units (docs/modules.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/module_tree.h"

namespace gpuprof {

struct ModuleTableOptions {
  bool show_events = false;  // each module's own ops one level below it, with the same columns
  // Only these modules ("ResNet.layer1", dotted paths from the top node)
  // and what is under them; their ancestors are drawn, without figures, to
  // place them. Empty: every module.
  std::vector<std::string> paths;
  int depth = -1;  // modules below this depth (top nodes: 0) are left out; -1: all
};

std::string format_module_table(const ModuleTree& tree, const ModuleTableOptions& options);

// The paths of `options.paths` that name no module of the tree.
std::vector<std::string> unknown_module_paths(const ModuleTree& tree, const std::vector<std::string>& paths);

}  // namespace gpuprof
