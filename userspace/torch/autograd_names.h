// autograd_names.h: torch.profiler's names of what is no aten op, from
// libtorch_cpu's exported symbols.
//
// Backward nodes. torch.profiler names a node's row by Node::name(): the
// generated nodes (torch::autograd::generated::AddmmBackward0) override it
// with their class name alone ("AddmmBackward0"); the others keep the
// default, the demangled class ("torch::autograd::AccumulateGrad"). The row
// spans the node's apply(std::vector<at::Tensor>&&), which every node class
// exports; the engine's row of a node, "autograd::engine::evaluate_function:
// " + that name, spans Engine::evaluate_function(graph_task, func, ...),
// named by func's class, read from its vtable pointer.
//
// Ranges. record_function ranges begin in
// torch::autograd::profiler::record_function_enter_new with a RecordFunction
// of RecordScope::USER_SCOPE and end in RecordFunction::end() or its
// destructor; a few kernels open RECORD_FUNCTION guards of their own
// (VariableType's detach and detach_: rows "detach", "detach_").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuprof {

// "_ZN5torch8autograd9generated14AddmmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE"
// -> "AddmmBackward0"; "..._ZN5torch8autograd14AccumulateGrad5applyEO..." ->
// "torch::autograd::AccumulateGrad"; nullopt for any other symbol.
std::optional<std::string> autograd_node_of_apply(std::string_view mangled_symbol);

// "_ZTVN5torch8autograd9generated14AddmmBackward0E" (the vtable) ->
// "AddmmBackward0", by the same rule; nullopt for any other symbol.
std::optional<std::string> autograd_node_of_vtable(std::string_view mangled_symbol);

// The engine's row of a node: "autograd::engine::evaluate_function: AddmmBackward0".
std::string evaluate_function_row(std::string_view node);

// The row of a node whose class gpuprof cannot name (not in libtorch_cpu,
// e.g. a Python-defined Function's PyNode in libtorch_python).
inline constexpr std::string_view kUnknownNode = "[node of another library]";

// What a libtorch_cpu symbol is to the range machinery (op_tracer_abi.h, ranges).
enum class RangeSite {
  none,
  enter,        // record_function_enter_new: arms a user range
  constructor,  // RecordFunction::RecordFunction(RecordScope): begins what is armed
  end,          // RecordFunction::end() and ~RecordFunction(): end a range
  evaluate_function,  // Engine::evaluate_function
};
RangeSite range_site_of(std::string_view mangled_symbol);

// at::sequence_number::get_and_increment(): numbers each autograd node as
// the Node constructor makes it, with the thread's next sequence number.
bool is_node_numbering(std::string_view mangled_symbol);

// The RECORD_FUNCTION guard an op's kernel opens directly, by the op's
// at::_ops struct name ("detach" -> "detach"); nullopt for the others.
std::optional<std::string> guard_range_of_op(std::string_view ops_struct);

}  // namespace gpuprof
