// module_attributes.h: the attribute name under which an nn.Module holds a
// child module ("layer1" in a resnet18, "0" in a Sequential, "conv1" in a
// BasicBlock), read from outside the running target (docs/modules.md).
//
// nn.Module keeps its children in self._modules, a dict (torch 2.x) or an
// OrderedDict (torch 1.x, a dict subclass) from attribute name to module;
// the parent's __dict__ holds it under "_modules". Both are read with
// process_vm_readv (python/python_dicts.h): the target is never written to
// nor stopped.
#pragma once

#include "python/python_dicts.h"
#include "python/python_offsets.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace gpuprof {

class ModuleAttributes {
 public:
  ModuleAttributes(int pid, const PythonOffsets& offsets);

  // The attribute name of `child` in `parent`'s _modules; nullopt when the
  // child is not there (a module called without being an attribute:
  // shared, functional) or memory is unreadable. The first name in
  // _modules' order when it holds the child twice.
  //
  // A parent's _modules is read once. A child not found makes it read
  // again only when _modules has changed since (its ma_version_tag, one
  // 8-byte read): a module may gain children after the first look. A
  // parent freed and its address reused by another module keeps the first
  // one's names until clear().
  std::optional<std::string> child_name(uint64_t parent, uint64_t child);

  // The dotted path under which `parent` holds `child` through modules it
  // holds but does not call itself (a ModuleList, a ModuleDict):
  // "layers.0" for a TransformerEncoder's first layer; child_name() when
  // it holds the child directly. Searched breadth-first, at most
  // kMaxPathDepth attributes deep, each level's names in sorted order (the
  // shortest path, and the same one every time, when there are several).
  // `position`: where the path's first attribute stands in parent's
  // _modules (0 first): the order of named_modules().
  struct HeldPath {
    std::string path;
    uint32_t position = 0;
  };
  std::optional<HeldPath> held_path(uint64_t parent, uint64_t child);
  static constexpr int kMaxPathDepth = 3;

  // Forgets every parent read.
  void clear() { parents_.clear(); }

  // Longer keys are not read (their children have no name here).
  static constexpr uint64_t kMaxNameLength = 256;

 private:
  struct Parent {
    uint64_t modules = 0;  // its _modules dict (0: none found)
    uint64_t version = 0;  // _modules' ma_version_tag when read
    std::unordered_map<uint64_t, std::string> names;  // child address -> attribute name
    std::unordered_map<std::string, uint32_t> positions;  // attribute name -> its place in _modules
  };
  void read_children(uint64_t parent, Parent* out);

  PythonDictReader dicts_;
  std::unordered_map<uint64_t, Parent> parents_;
};

}  // namespace gpuprof
