#include "torch/exitless_calls.h"

namespace gpuprof {

void ExitlessCalls::add_ops(uint32_t first_op_id, const DispatcherCatalog& catalog) {
  for (uint32_t op : catalog.exitless_ops) {
    const uint32_t id = first_op_id + op;
    if (id >= exitless_.size()) exitless_.resize(id + 1, false);
    exitless_[id] = true;
    const OpInfo& info = catalog.ops[op];
    names_[id] = info.name + (info.overload.empty() ? "" : "." + info.overload);
  }
}

std::string ExitlessCalls::warning() const {
  if (calls_.empty()) return "";
  uint64_t total = 0;
  std::string names;
  for (const auto& [op, n] : calls_) {
    total += n;
    names += (names.empty() ? "" : ", ") + names_.at(op) + " (" + std::to_string(n) + ")";
  }
  return std::to_string(total) + (total == 1 ? " call" : " calls") + " of ops without an exit probe: " + names +
         "; each ends at its thread's next event, so their times are not measured";
}

}  // namespace gpuprof
