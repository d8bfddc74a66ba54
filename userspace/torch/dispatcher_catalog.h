// dispatcher_catalog.h: every probe site of one libtorch_cpu file.
//
// Scans the library once: each exported at::_ops::<op>::call becomes an op
// (its torch.profiler name from op_names.h), with an entry site on its
// first instruction and exit sites on its `ret` instructions. Sites are
// FILE offsets with a cookie (GP_COOKIE in op_tracer_abi.h) ready for one
// uprobe_multi link.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "op_tracer_abi.h"
#include "torch/op_args.h"
#include "record/recording.h"

namespace gpuprof {

struct ProbeSites {
  std::vector<uint64_t> offsets;  // file offsets
  std::vector<uint64_t> cookies;  // same length
  void add(uint64_t offset, uint64_t cookie) {
    offsets.push_back(offset);
    cookies.push_back(cookie);
  }
  size_t size() const { return offsets.size(); }
};

// Where exit probes go (docs/exit-modes.md):
//   emulated: on the stack-protector branch before each `ret` (one emulated
//             trap), falling back to the `ret` where a body has none;
//   ret:      on every `ret` (single-stepped: several traps per exit).
enum class ExitMode { emulated, ret };

struct DispatcherCatalog {
  std::vector<OpInfo> ops;  // index == op id
  ProbeSites sites;         // entries and exits together
  uint32_t entry_sites = 0;
  uint32_t exit_sites = 0;
  uint32_t exit_sites_single_stepped = 0;  // exits probed on the `ret` itself
  uint32_t ops_without_exit = 0;      // no `ret` found: such calls end by sp reconciliation
  std::vector<uint32_t> exitless_ops;  // their op ids
  // Past the aten ops (autograd_names.h): backward nodes' apply, the
  // engine's evaluate_function (GP_NO_OP when absent), the ranges kernels
  // open ("detach"), and the sites that arm, begin and end ranges.
  uint32_t node_ops = 0;
  uint32_t collective_ops = 0;  // c10d's collectives and waits (collective_names.h)
  uint32_t evaluate_function_op = GP_NO_OP;
  uint32_t range_sites = 0;
  uint32_t unexported_range_enters = 0;  // range_enters.h (torch 1.13's record_function)
  // Address points of backward nodes' vtables (what a Node's vptr holds)
  // -> node name, sorted: evaluate_function's node is named from them.
  std::vector<std::pair<uint64_t, std::string>> node_vtables;
  // The rets of at::sequence_number::get_and_increment() (GP_SITE_NODE_MADE):
  // not in `sites`, attached only by record --with-modules, which links
  // backward nodes to the forward ops that made them (docs/modules.md).
  ProbeSites node_made_sites;
  uint32_t entries_single_stepped = 0;  // entry site not a push: slower probe
  // Per op id: kEntrySingleStepped / kExitSingleStepped (recording.h) when
  // its entry, or most of its exits, are single-stepped (probe costs).
  std::vector<uint8_t> op_sites;
  uint32_t entries_after_endbr = 0;     // entry site after a leading endbr64 (CET builds)
  size_t schemas_found = 0;
  // Where each op's tensor arguments are at its entry (record
  // --record-shapes); index == op id. !ok plans say why in `why`.
  std::vector<OpArgPlan> arg_plans;
  uint32_t ops_without_arg_plan = 0;  // arg_plans that are !ok
  std::string build_id;
};

// "" when every op has an exit probe; else a line that counts and names
// (the first few of) those without (printed with -v; exitless_calls.h
// warns when such an op is called).
std::string describe_exitless_ops(const DispatcherCatalog& catalog);

// The catalog's sites for a recording where its ops start at first_op
// (record -a: one catalog per libtorch file, one op table): every op id in
// the cookies moved, guard range ids included (those must stay below 2^16:
// beyond, the sites lose their guard, and *lost_guards says so).
ProbeSites sites_for_ops_from(const DispatcherCatalog& catalog, uint32_t first_op, bool* lost_guards);

// An error when the file cannot be read or exports no dispatcher entry
// points (it is not a libtorch_cpu).
Result<DispatcherCatalog> load_dispatcher_catalog(const std::string& path, ExitMode exit_mode);

}  // namespace gpuprof
