#include "python/module_attributes.h"

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
    if (out->names.contains(item.value)) continue;  // the first name wins
    if (auto name = dicts_.str(item.key, kMaxNameLength)) out->names.emplace(item.value, std::move(*name));
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

}  // namespace gpuprof
