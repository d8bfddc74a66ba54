#include "torch/runtime_ops.h"

#include <algorithm>

#include "torch/autograd_names.h"

namespace gpuprof {
namespace {

constexpr size_t kMaxOpen = 65536;

// [length][bytes, padded to words]: a range's name in RANGE_BEGIN's payload
// (after the Python stack, which the caller has taken off).
std::string range_name(std::span<const uint64_t> words) {
  if (words.empty()) return "";
  const size_t length = std::min<uint64_t>(words[0], GP_RANGE_NAME_BYTES);
  const size_t room = (words.size() - 1) * 8;
  std::string name(reinterpret_cast<const char*>(words.data() + 1), std::min(length, room));
  if (words[0] > GP_RANGE_NAME_BYTES) name += "...";
  return name;
}

}  // namespace

void RuntimeOps::add_process(uint32_t pid, uint32_t first_op, const DispatcherCatalog& catalog, uint64_t load_bias) {
  std::shared_ptr<const Library> library;
  if (catalog.evaluate_function_op != GP_NO_OP) {
    const uint32_t op = first_op + catalog.evaluate_function_op;
    auto known = evaluate_ops_.find(op);
    if (known == evaluate_ops_.end())
      known = evaluate_ops_.emplace(op, std::make_shared<const Library>(Library{catalog.node_vtables})).first;
    library = known->second;
  }
  processes_[pid] = Process{library, load_bias};
}

Result<uint32_t> RuntimeOps::intern(const std::string& name, OpKind kind) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  OpInfo op{name, "", ""};
  op.kind = kind;
  op.arg_count = 0;  // torch prints [] as their input shapes
  ASSIGN_OR_RETURN(const uint32_t id, add_op_(op));
  ids_.emplace(name, id);
  return id;
}

std::string RuntimeOps::node_name(uint32_t pid, uint64_t vptr) const {
  auto process = processes_.find(pid);
  if (process == processes_.end() || !process->second.library || vptr < process->second.load_bias)
    return std::string(kUnknownNode);
  const auto& vtables = process->second.library->vtables;
  const uint64_t address = vptr - process->second.load_bias;
  auto it = std::lower_bound(vtables.begin(), vtables.end(), address,
                             [](const std::pair<uint64_t, std::string>& v, uint64_t a) { return v.first < a; });
  return it != vtables.end() && it->first == address ? it->second : std::string(kUnknownNode);
}

Result<void> RuntimeOps::name(gp_event& event, std::span<const uint64_t> payload) {
  switch (event.kind) {
    case GP_EV_RANGE_BEGIN: {
      if (event.op_id == GP_NO_OP) {  // a record_function range: named by its payload
        ASSIGN_OR_RETURN(event.op_id, intern(range_name(payload), OpKind::user_range));
      }
      if (open_ranges_.size() >= kMaxOpen) open_ranges_.clear();
      open_ranges_[{event.pid, event.sp}] = event.op_id;
      return {};
    }
    case GP_EV_RANGE_END: {
      // A user range's END names no op in the ring: its BEGIN's op, when
      // seen (a guard's carries its op already).
      auto it = open_ranges_.find({event.pid, event.sp});
      if (it != open_ranges_.end()) {
        event.op_id = it->second;
        open_ranges_.erase(it);
      }
      return {};
    }
    case GP_EV_OP_ENTRY:
    case GP_EV_OP_EXIT:
      break;
    default:
      return {};
  }
  if (!evaluate_ops_.count(event.op_id)) return {};
  if (event.kind == GP_EV_OP_ENTRY) {
    const uint64_t vptr = payload.empty() ? 0 : payload[0];
    ASSIGN_OR_RETURN(const uint32_t id,
                     intern(evaluate_function_row(node_name(event.pid, vptr)), OpKind::autograd_engine));
    if (open_evaluates_.size() >= kMaxOpen) open_evaluates_.clear();
    open_evaluates_[{event.tid, event.sp}] = id;
    event.op_id = id;
    return {};
  }
  auto it = open_evaluates_.find({event.tid, event.sp});
  if (it == open_evaluates_.end()) return {};  // its entry came before the recording: an exit of nothing
  event.op_id = it->second;
  open_evaluates_.erase(it);
  return {};
}

}  // namespace gpuprof
