#include "python/module_attributes.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "python/python_runtime.h"

namespace gpuprof {

ModuleAttributes::ModuleAttributes(int pid, const PythonOffsets& offsets)
    : dicts_([pid](uint64_t address, void* buffer, size_t len) { return read_target_memory(pid, address, buffer, len); },
             offsets) {}

void ModuleAttributes::read_children(uint64_t parent, Parent* out) {
  *out = Parent{};
  auto modules = dicts_.instance_attribute(parent, "_modules");
  if (!modules) return;
  // The version first: a change while the entries are read shows on the
  // next miss.
  auto version = dicts_.dict_version(*modules);
  auto items = dicts_.dict_items(*modules);
  if (!version || !items) return;
  out->modules = *modules;
  out->version = *version;
  for (const PythonDictItem& item : *items) {
    const auto position = static_cast<uint32_t>(out->positions.size());
    auto name = dicts_.str(item.key, kMaxNameLength);
    if (!name) continue;
    out->positions.emplace(*name, position);
    if (!out->names.contains(item.value)) out->names.emplace(item.value, std::move(*name));  // the first name wins
  }
}

std::optional<std::string> ModuleAttributes::child_name(uint64_t parent, uint64_t child) {
  if (!plausible_object_address(parent) || !plausible_object_address(child)) return std::nullopt;
  auto [it, fresh] = parents_.try_emplace(parent);
  Parent& p = it->second;
  if (fresh) read_children(parent, &p);
  if (auto found = p.names.find(child); found != p.names.end()) return found->second;
  // Not there: read again only when _modules has changed since (a parent
  // without one, no module, is not read again).
  if (!p.modules || dicts_.dict_version(p.modules) == p.version) return std::nullopt;
  read_children(parent, &p);
  if (auto found = p.names.find(child); found != p.names.end()) return found->second;
  return std::nullopt;
}

std::optional<ModuleAttributes::HeldPath> ModuleAttributes::held_path(uint64_t parent, uint64_t child) {
  auto position_of = [&](const std::string& path) {
    const std::string first = path.substr(0, path.find('.'));
    auto held = parents_.find(parent);  // read by child_name()
    if (held == parents_.end()) return 0u;
    auto it = held->second.positions.find(first);
    return it == held->second.positions.end() ? 0u : it->second;
  };
  if (auto name = child_name(parent, child)) return HeldPath{*name, position_of(*name)};
  // (module, its path from parent), one level at a time.
  std::vector<std::pair<uint64_t, std::string>> level = {{parent, ""}};
  for (int depth = 1; depth < kMaxPathDepth && !level.empty(); depth++) {
    std::vector<std::pair<uint64_t, std::string>> next;
    for (const auto& [holder, path] : level) {
      auto it = parents_.find(holder);  // child_name() read it
      if (it == parents_.end()) continue;
      std::vector<std::pair<std::string, uint64_t>> held;
      for (const auto& [address, name] : it->second.names) held.push_back({name, address});
      std::sort(held.begin(), held.end());
      for (const auto& [name, address] : held) next.push_back({address, path.empty() ? name : path + "." + name});
    }
    for (const auto& [holder, path] : next)
      if (auto name = child_name(holder, child)) return HeldPath{path + "." + *name, position_of(path)};
    level = std::move(next);
  }
  return std::nullopt;
}

}  // namespace gpuprof
