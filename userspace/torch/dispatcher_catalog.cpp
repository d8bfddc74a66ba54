#include "torch/dispatcher_catalog.h"

#include <algorithm>
#include <unordered_set>

#include "torch/autograd_names.h"
#include "torch/collective_names.h"
#include "symbols/elf_image.h"
#include "symbols/function_starts.h"
#include "symbols/range_enters.h"
#include "op_tracer_abi.h"
#include "torch/op_names.h"
#include "symbols/ret_finder.h"

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

ProbeSites sites_for_ops_from(const DispatcherCatalog& catalog, uint32_t first_op, bool* lost_guards) {
  *lost_guards = false;
  ProbeSites sites = catalog.sites;
  for (uint64_t& cookie : sites.cookies) {
    if (GP_COOKIE_OP(cookie) == GP_NO_OP) continue;
    cookie = (cookie & ~0xffffffffull) | (GP_COOKIE_OP(cookie) + first_op);
    if ((cookie & GP_COOKIE_GUARD) && GP_COOKIE_KIND(cookie) == GP_EV_OP_ENTRY) {
      const uint64_t guard = GP_COOKIE_GUARD_OP(cookie) + uint64_t{first_op};
      cookie &= ~(0xffffull << 48);
      if (guard <= 0xffff) {
        cookie |= guard << 48;
      } else {
        cookie &= ~GP_COOKIE_GUARD;
        *lost_guards = true;
      }
    }
  }
  return sites;
}

Result<DispatcherCatalog> load_dispatcher_catalog(const std::string& path, ExitMode exit_mode) {
  ASSIGN_OR_RETURN(const ElfImage elf, ElfImage::open(path));

  OpNameResolver resolver;
  elf.for_each_string(".rodata", 4, [&](std::string_view text) {
    if (auto schema = parse_full_schema(text)) resolver.add_schema(*schema);
    else if (auto op = parse_schema(text)) resolver.add_schema(*op);
  });

  struct Entry {
    ElfSymbol symbol;
    std::string_view struct_name;
  };
  std::vector<Entry> entries;
  elf.for_each_function([&](const ElfSymbol& sym) {
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
  if (entries.empty()) return Error(path + " exports no at::_ops::*::call entry points (is it libtorch_cpu?)");

  std::vector<std::string_view> call_symbols;
  for (const Entry& entry : entries) call_symbols.push_back(entry.symbol.name);
  const OptionalAbi optional_abi = optional_abi_of(call_symbols);

  DispatcherCatalog catalog;
  catalog.schemas_found = resolver.schema_count();
  catalog.build_id = elf.build_id();
  // Entry and exit sites of one function: its first instruction (after a
  // leading endbr64) and each way out (ret_finder.h); nullopt when its body
  // cannot be read. Extra cookie bits go on the entry and on the exits.
  auto add_function = [&](const ElfSymbol& symbol, OpInfo info, OpArgPlan plan, uint64_t entry_bits,
                          uint64_t exit_bits) -> std::optional<uint32_t> {
    auto body = elf.bytes_at(symbol.address, symbol.size);
    if (body.empty()) return std::nullopt;
    BodyExits exits = find_body_exits(body, symbol.address);
    auto entry_offset = elf.file_offset(exits.entry_address);
    if (!entry_offset) return std::nullopt;
    const auto op_id = static_cast<uint32_t>(catalog.ops.size());
    catalog.ops.push_back(std::move(info));
    catalog.arg_plans.push_back(std::move(plan));
    if (!catalog.arg_plans.back().ok) catalog.ops_without_arg_plan++;
    catalog.sites.add(*entry_offset, GP_COOKIE(GP_EV_OP_ENTRY, op_id) | entry_bits);
    catalog.entry_sites++;
    if (!exits.entry_emulated) catalog.entries_single_stepped++;
    uint8_t sites = exits.entry_emulated ? 0 : kEntrySingleStepped;
    size_t stepped_exits = 0;
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
      std::optional<uint64_t> offset = elf.file_offset(emulated ? emulated->address : ret);
      if (!offset) continue;
      if (emulated) {
        catalog.sites.add(*offset, GP_COOKIE_FRAME_EXIT(op_id, emulated->base_is_rbp, emulated->entry_sp_offset) |
                                       exit_bits);
      } else {
        catalog.sites.add(*offset, GP_COOKIE(GP_EV_OP_EXIT, op_id) | exit_bits);
        catalog.exit_sites_single_stepped++;
        stepped_exits++;
      }
      catalog.exit_sites++;
    }
    if (2 * stepped_exits > exits.ret_addresses.size()) sites |= kExitSingleStepped;
    catalog.op_sites.resize(op_id + 1, 0);
    catalog.op_sites[op_id] = sites;
    return op_id;
  };
  OpArgPlan no_plan;
  no_plan.why = "not an aten op";
  // An entry-only site on a function's first instruction (after endbr64).
  auto add_entry_site = [&](uint64_t address, uint64_t cookie) {
    const BodyExits first = find_body_exits(elf.bytes_at(address, 16), address);
    auto offset = elf.file_offset(first.entry_address ? first.entry_address : address);
    if (!offset) return false;
    catalog.sites.add(*offset, cookie);
    return true;
  };

  // Backward nodes, Engine::evaluate_function, the range sites and c10d's
  // collectives.
  struct Other {
    ElfSymbol symbol;
    std::string node = {};  // an autograd node's name
    RangeSite site = RangeSite::none;
    std::string collective = {};  // a collective's row (collective_names.h)
  };
  std::vector<Other> others;
  std::optional<ElfSymbol> node_numbering;
  elf.for_each_code_or_data_symbol([&](const ElfSymbol& sym, bool is_function) {
    if (!is_function) {
      if (auto node = autograd_node_of_vtable(sym.name))  // the vptr points past the offset-to-top and RTTI
        catalog.node_vtables.emplace_back(sym.address + 16, *node);
      return;
    }
    if (is_node_numbering(sym.name)) node_numbering = sym;
    if (auto node = autograd_node_of_apply(sym.name)) others.push_back({.symbol = sym, .node = *node});
    else if (RangeSite site = range_site_of(sym.name); site != RangeSite::none)
      others.push_back({.symbol = sym, .site = site});
    else if (auto collective = collective_of_symbol(sym.name))
      others.push_back({.symbol = sym, .collective = *collective});
  });
  std::sort(others.begin(), others.end(), [](const Other& a, const Other& b) { return a.symbol.address < b.symbol.address; });
  others.erase(std::unique(others.begin(), others.end(),
                           [](const Other& a, const Other& b) { return a.symbol.address == b.symbol.address; }),
               others.end());
  std::sort(catalog.node_vtables.begin(), catalog.node_vtables.end());
  catalog.node_vtables.erase(std::unique(catalog.node_vtables.begin(), catalog.node_vtables.end()),
                             catalog.node_vtables.end());

  // The ranges some ops' kernels open themselves ("detach") become ops after
  // every traced function's: their sites are marked once their ids are known.
  struct Guarded {
    size_t first_site, end_site;
    std::string range;
  };
  std::vector<Guarded> guarded;
  for (const Entry& entry : entries) {
    OpName name = resolver.resolve(entry.struct_name);
    const size_t first_site = catalog.sites.size();
    add_function(entry.symbol, OpInfo{name.torch_name(), name.overload, std::string(entry.symbol.name)},
                 plan_op_args(entry.symbol.name, resolver.schemas(entry.struct_name), optional_abi), 0, 0);
    if (auto guard = guard_range_of_op(entry.struct_name))
      guarded.push_back({first_site, catalog.sites.size(), *guard});
  }
  for (const Other& other : others) {
    if (!other.collective.empty()) {
      OpInfo info{other.collective, "", std::string(other.symbol.name)};
      info.kind = OpKind::collective;
      if (add_function(other.symbol, std::move(info), no_plan, 0, 0)) catalog.collective_ops++;
    } else if (!other.node.empty()) {
      OpInfo info{other.node, "", std::string(other.symbol.name)};
      info.kind = OpKind::autograd_node;
      if (add_function(other.symbol, std::move(info), no_plan, 0, 0)) catalog.node_ops++;
    } else if (other.site == RangeSite::evaluate_function) {
      OpInfo info{evaluate_function_row("*"), "", std::string(other.symbol.name)};
      info.kind = OpKind::autograd_engine;
      catalog.evaluate_function_op = add_function(other.symbol, std::move(info), no_plan, GP_COOKIE_NODE_ARG, 0)
                                         .value_or(GP_NO_OP);
    } else {
      // Entry-only sites: they arm, begin or end ranges (op_tracer_abi.h).
      const uint32_t kind = other.site == RangeSite::enter         ? GP_SITE_RANGE_ENTER
                            : other.site == RangeSite::constructor ? GP_SITE_RECORD_CTOR
                                                                   : GP_SITE_RECORD_END;
      if (add_entry_site(other.symbol.address, GP_COOKIE(kind, GP_NO_OP))) catalog.range_sites++;
      if (other.site == RangeSite::enter) {
        // torch 1.13's record_function enters through a static function.
        if (auto starts = FunctionStarts::read(elf))
          for (uint64_t enter : unexported_range_enters(elf, *starts, other.symbol.address, other.symbol.size))
            if (add_entry_site(enter, GP_COOKIE(GP_SITE_RANGE_ENTER, GP_NO_OP))) {
              catalog.range_sites++;
              catalog.unexported_range_enters++;
            }
      }
    }
  }
  // Each ret of the node numbering: rax is the new node's number there.
  if (node_numbering)
    for (uint64_t ret : find_body_exits(elf.bytes_at(node_numbering->address, node_numbering->size),
                                        node_numbering->address).ret_addresses)
      if (auto offset = elf.file_offset(ret)) catalog.node_made_sites.add(*offset, GP_COOKIE(GP_SITE_NODE_MADE, GP_NO_OP));
  for (const Guarded& g : guarded) {
    const auto range_op = static_cast<uint32_t>(catalog.ops.size());
    OpInfo info{g.range, "", ""};
    info.kind = OpKind::guard_range;
    info.arg_count = 0;
    catalog.ops.push_back(std::move(info));
    catalog.arg_plans.push_back(no_plan);
    catalog.ops_without_arg_plan++;
    for (size_t i = g.first_site; i < g.end_site; i++) {
      uint64_t& cookie = catalog.sites.cookies[i];
      cookie |= GP_COOKIE_GUARD;
      if (GP_COOKIE_KIND(cookie) == GP_EV_OP_ENTRY) cookie |= static_cast<uint64_t>(range_op) << 48;
    }
  }
  return catalog;
}

}  // namespace gpuprof
