#include "torch/autograd_names.h"

#include <vector>

#include "torch/mangled_path.h"

namespace gpuprof {
namespace {

// {"torch", "autograd", ..., "Class"} -> the node name (see the header).
std::optional<std::string> node_name(const std::vector<std::string_view>& path) {
  if (path.size() < 3 || path[0] != "torch" || path[1] != "autograd") return std::nullopt;
  if (path[2] == "generated") return path.size() == 4 ? std::optional<std::string>(path[3]) : std::nullopt;
  std::string name;
  for (std::string_view part : path) name += (name.empty() ? "" : "::") + std::string(part);
  return name;
}

bool is_tensor_vector_rvalue_tail(std::string_view rest) {
  // "EOSt6vectorIN2at6TensorESaIS<n>_EE": apply(std::vector<at::Tensor>&&)
  constexpr std::string_view head = "EOSt6vectorIN2at6TensorESaIS";
  if (!rest.starts_with(head)) return false;
  rest.remove_prefix(head.size());
  const size_t underscore = rest.find('_');
  return underscore != std::string_view::npos && underscore <= 2 && rest.substr(underscore) == "_EE";
}

}  // namespace

std::optional<std::string> autograd_node_of_apply(std::string_view sym) {
  if (!sym.starts_with("_ZN")) return std::nullopt;
  sym.remove_prefix(3);
  std::vector<std::string_view> path = mangled_components(sym);
  if (path.size() < 2 || path.back() != "apply" || !is_tensor_vector_rvalue_tail(sym)) return std::nullopt;
  path.pop_back();
  return node_name(path);
}

std::optional<std::string> autograd_node_of_vtable(std::string_view sym) {
  if (!sym.starts_with("_ZTVN")) return std::nullopt;
  sym.remove_prefix(5);
  std::vector<std::string_view> path = mangled_components(sym);
  if (sym != "E") return std::nullopt;
  return node_name(path);
}

std::string evaluate_function_row(std::string_view node) {
  return "autograd::engine::evaluate_function: " + std::string(node);
}

RangeSite range_site_of(std::string_view sym) {
  if (sym.starts_with("_ZN5torch8autograd8profiler25record_function_enter_newE")) return RangeSite::enter;
  if (sym == "_ZN2at14RecordFunctionC1ENS_11RecordScopeE" || sym == "_ZN2at14RecordFunctionC2ENS_11RecordScopeE")
    return RangeSite::constructor;
  if (sym == "_ZN2at14RecordFunction3endEv" || sym == "_ZN2at14RecordFunctionD1Ev" ||
      sym == "_ZN2at14RecordFunctionD2Ev")
    return RangeSite::end;
  if (sym.starts_with("_ZN5torch8autograd6Engine17evaluate_functionE")) return RangeSite::evaluate_function;
  return RangeSite::none;
}

bool is_node_numbering(std::string_view sym) { return sym == "_ZN2at15sequence_number17get_and_incrementEv"; }

std::optional<std::string> guard_range_of_op(std::string_view ops_struct) {
  // torch/csrc/autograd/VariableTypeManual.cpp: RECORD_FUNCTION("detach", ...)
  // and RECORD_FUNCTION("detach_", ...) open the kernels of aten::detach and
  // aten::detach_ (torch 2.x; 1.13's open them too where its table shows them).
  if (ops_struct == "detach" || ops_struct == "detach_") return std::string(ops_struct);
  return std::nullopt;
}

}  // namespace gpuprof
