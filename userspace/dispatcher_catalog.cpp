#include "dispatcher_catalog.h"

#include <algorithm>
#include <unordered_set>

#include "elf_image.h"
#include "events.h"
#include "op_names.h"
#include "ret_finder.h"

namespace gpuprof {

std::string describe_exitless_ops(const DispatcherCatalog& catalog) {
  if (catalog.exitless_ops.empty()) return "";
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < catalog.exitless_ops.size() && i < kNamed; i++) {
    const OpInfo& op = catalog.ops[catalog.exitless_ops[i]];
    names += (i ? ", " : "") + op.name + (op.overload.empty() ? "" : "." + op.overload);
  }
  if (catalog.exitless_ops.size() > kNamed) names += ", ...";
  const size_t n = catalog.exitless_ops.size();
  return std::to_string(n) + " of " + std::to_string(catalog.ops.size()) + (n == 1 ? " ops has" : " ops have") +
         " no exit probe (no `ret` found in the body): " + names;
}

std::optional<DispatcherCatalog> load_dispatcher_catalog(const std::string& path, ExitMode exit_mode,
                                                         std::string* error) {
  auto elf = ElfImage::open(path, error);
  if (!elf) return std::nullopt;

  OpNameResolver resolver;
  elf->for_each_string(".rodata", 4, [&](std::string_view text) {
    if (auto schema = parse_full_schema(text)) resolver.add_schema(*schema);
    else if (auto op = parse_schema(text)) resolver.add_schema(*op);
  });

  struct Entry {
    ElfSymbol symbol;
    std::string_view struct_name;
  };
  std::vector<Entry> entries;
  elf->for_each_function([&](const ElfSymbol& sym) {
    if (auto s = dispatcher_call_struct(sym.name)) entries.push_back({sym, *s});
  });
  // .dynsym and .symtab may both list a symbol; keep one per address, in
  // address order so op ids are stable for a given file.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.symbol.address < b.symbol.address; });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const Entry& a, const Entry& b) {
                              return a.symbol.address == b.symbol.address;
                            }),
                entries.end());
  if (entries.empty()) {
    *error = path + " exports no at::_ops::*::call entry points (is it libtorch_cpu?)";
    return std::nullopt;
  }

  std::vector<std::string_view> call_symbols;
  for (const Entry& entry : entries) call_symbols.push_back(entry.symbol.name);
  const OptionalAbi optional_abi = optional_abi_of(call_symbols);

  DispatcherCatalog catalog;
  catalog.schemas_found = resolver.schema_count();
  catalog.build_id = elf->build_id();
  for (const Entry& entry : entries) {
    auto body = elf->bytes_at(entry.symbol.address, entry.symbol.size);
    if (body.empty()) continue;
    BodyExits exits = find_body_exits(body, entry.symbol.address);
    auto entry_offset = elf->file_offset(exits.entry_address);
    if (!entry_offset) continue;
    const auto op_id = static_cast<uint32_t>(catalog.ops.size());
    OpName name = resolver.resolve(entry.struct_name);
    catalog.ops.push_back(OpInfo{name.torch_name(), name.overload, std::string(entry.symbol.name)});
    catalog.arg_plans.push_back(
        plan_op_args(entry.symbol.name, resolver.schemas(entry.struct_name), optional_abi));
    if (!catalog.arg_plans.back().ok) catalog.ops_without_arg_plan++;
    catalog.sites.add(*entry_offset, GP_COOKIE(GP_EV_OP_ENTRY, op_id));
    catalog.entry_sites++;
    if (!exits.entry_emulated) catalog.entries_single_stepped++;
    if (exits.entry_after_endbr) catalog.entries_after_endbr++;
    if (exits.ret_addresses.empty()) {
      catalog.ops_without_exit++;
      catalog.exitless_ops.push_back(op_id);
    }
    for (uint64_t ret : exits.ret_addresses) {
      const EmulatedExit* emulated = nullptr;
      if (exit_mode == ExitMode::emulated)
        for (const EmulatedExit& e : exits.emulated_exits)
          if (e.ret_address == ret) emulated = &e;
      std::optional<uint64_t> offset = elf->file_offset(emulated ? emulated->address : ret);
      if (!offset) continue;
      if (emulated) {
        catalog.sites.add(*offset, GP_COOKIE_FRAME_EXIT(op_id, emulated->base_is_rbp,
                                                        emulated->entry_sp_offset));
      } else {
        catalog.sites.add(*offset, GP_COOKIE(GP_EV_OP_EXIT, op_id));
        catalog.exit_sites_single_stepped++;
      }
      catalog.exit_sites++;
    }
  }
  return catalog;
}

}  // namespace gpuprof
