// runtime_ops.h: the rows whose names are known only while the target runs.
//
// Two kinds of torch.profiler row are named by an argument, not by the
// function the probe sits on (autograd_names.h):
//   - a record_function range: its name is record_function_enter_new's
//     argument, which RANGE_BEGIN carries (op_tracer_abi.h); its END pairs with it
//     by the RecordFunction object's address;
//   - the engine's row of a node, "autograd::engine::evaluate_function:
//     AddmmBackward0": its ENTRY carries the node's vtable pointer, named
//     from the library's vtable symbols; its EXIT pairs by (thread, sp).
// The recorder passes every op event through name(): each distinct name
// becomes an op of the recording the first time it is seen (a MORE_OPS
// chunk, through add_ops), and the event is rewritten to carry it, so that
// every output reads plain op ids. One per recording; -a feeds it every
// traced process.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "torch/dispatcher_catalog.h"
#include "op_tracer_abi.h"
#include "record/recording.h"

namespace gpuprof {

class RuntimeOps {
 public:
  // Defines one op in the recording and returns its id (an error when that
  // fails).
  using AddOp = std::function<Result<uint32_t>(const OpInfo& op)>;
  explicit RuntimeOps(AddOp add_op) : add_op_(std::move(add_op)) {}

  // A libtorch_cpu whose ops start at first_op in the recording, mapped
  // by process pid at load_bias (runtime address - ELF address).
  void add_process(uint32_t pid, uint32_t first_op, const DispatcherCatalog& catalog, uint64_t load_bias);
  // A child forked by a traced process: the same library at the same place.
  void add_forked(uint32_t child, uint32_t parent) {
    if (auto it = processes_.find(parent); it != processes_.end()) processes_[child] = it->second;
  }

  // Rewrites event.op_id for the events above. An error when defining the
  // op the event names failed (the event is not to be recorded).
  Result<void> name(gp_event& event, std::span<const uint64_t> payload);

  // Whether op is an evaluate_function op (its ENTRY payload carries the node).
  bool names_by_node(uint32_t op) const { return evaluate_ops_.count(op) != 0; }

 private:
  struct Library {
    std::vector<std::pair<uint64_t, std::string>> vtables;  // node_vtables of its catalog
  };
  struct Process {
    std::shared_ptr<const Library> library;
    uint64_t load_bias = 0;
  };
  Result<uint32_t> intern(const std::string& name, OpKind kind);
  std::string node_name(uint32_t pid, uint64_t vptr) const;

  AddOp add_op_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::map<uint32_t, std::shared_ptr<const Library>> evaluate_ops_;  // evaluate_function op -> its library
  std::unordered_map<uint32_t, Process> processes_;
  // Open ranges by (pid, RecordFunction*), open evaluate_function calls by
  // (tid, sp): their ends carry no name. Bounded: emptied when they hold
  // kMaxOpen entries (ends that never came: leaked objects, exceptions),
  // after which such an end names no op and is counted as unmatched.
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> open_ranges_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> open_evaluates_;
};

}  // namespace gpuprof
