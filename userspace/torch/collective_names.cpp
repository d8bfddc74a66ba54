#include "torch/collective_names.h"

#include <algorithm>
#include <array>
#include <vector>

#include "torch/mangled_path.h"

namespace gpuprof {
namespace {

// The collectives of c10d::Backend (torch/csrc/distributed/c10d/Backend.hpp,
// 1.13's ProcessGroup.hpp): the methods a backend overrides.
constexpr std::array<std::string_view, 21> kCollectives = {
    "allreduce", "allreduce_coalesced", "allreduce_sparse", "broadcast", "reduce", "allgather",
    "allgather_coalesced", "allgather_into_tensor_coalesced", "_allgather_base", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor_coalesced", "_reduce_scatter_base", "alltoall", "alltoall_base",
    "send", "recv", "recvAnysource", "barrier", "monitoredBarrier"};

bool is_backend_class(std::string_view name) {
  return name.starts_with("ProcessGroup") && name.size() > std::string_view("ProcessGroup").size();
}

}  // namespace

std::optional<std::string> collective_of_symbol(std::string_view sym) {
  if (!sym.starts_with("_ZN")) return std::nullopt;
  sym.remove_prefix(3);
  const std::vector<std::string_view> path = mangled_components(sym);
  // What follows the name: "E" and the parameters. A const method
  // ("NK4c10d...") or a template does not get here.
  if (!sym.starts_with("E") || path.size() < 3 || path[0] != "c10d") return std::nullopt;
  const std::string_view method = path.back();
  bool known = false;
  if (path.size() == 3 && path[1] == "Work") {
    known = method == "wait";  // c10d::Work::wait
  } else if (path.size() == 3 && is_backend_class(path[1])) {
    known = std::find(kCollectives.begin(), kCollectives.end(), method) != kCollectives.end();
  } else if (path.size() == 4 && is_backend_class(path[1]) && path[2].ends_with("Work")) {
    known = method == "wait";  // a backend's own work class: c10d::ProcessGroupGloo::SendWork::wait
  }
  if (!known) return std::nullopt;
  std::string name;
  for (std::string_view part : path) name += (name.empty() ? "" : "::") + std::string(part);
  return name;
}

}  // namespace gpuprof
