// op_names.h: torch.profiler's operator names from libtorch's own data.
//
// Each dispatcher entry point is `at::_ops::<S>::call`, where <S> is the op
// name, plus `_` and the overload name when there is one: add_Tensor is
// aten::add.Tensor, add__Tensor is aten::add_.Tensor, relu is aten::relu.
// The split is ambiguous from <S> alone (is `dropout_` the in-place op or
// `dropout` with an empty overload?), so it is settled with the schema
// strings that libtorch keeps in .rodata ("add.Tensor(Tensor self, ...) ->
// Tensor", sometimes prefixed with "aten::"). torch.profiler prints
// "aten::" + name, without the overload.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gpuprof {

struct OpName {
  std::string name;      // "add"
  std::string overload;  // "Tensor", or "" when the op has none
  std::string torch_name() const { return "aten::" + name; }
  bool operator==(const OpName&) const = default;
};

// "_ZN2at4_ops10add_Tensor4callE..." -> "add_Tensor". nullopt for any other
// symbol (redispatch, other namespaces, non-dispatcher functions).
std::optional<std::string_view> dispatcher_call_struct(std::string_view mangled_symbol);

// "aten::add.Tensor(Tensor self, ...) -> Tensor" or "add.Tensor(...) -> ..."
// -> {add, Tensor}. nullopt when the text is not a schema.
std::optional<OpName> parse_schema(std::string_view text);

// A schema split into its parts: "add.Tensor(Tensor self, Tensor other, *,
// Scalar alpha=1) -> Tensor" has the arguments {"Tensor self", "Tensor
// other", "Scalar alpha=1"} (the keyword-only marker `*` is not an
// argument) and the returns "Tensor".
struct Schema {
  OpName op;
  std::vector<std::string> arguments;  // each trimmed, as written
  std::string returns;                 // the text after "->", trimmed
  bool operator==(const Schema&) const = default;
};

// Like parse_schema, with the argument list and the returns.
std::optional<Schema> parse_full_schema(std::string_view text);

// The type of one schema argument: "Tensor(a!) self" -> "Tensor(a!)",
// "int[2] stride=[1, 1]" -> "int[2]", "Dict(str, t) d" -> "Dict(str, t)".
std::string_view schema_argument_type(std::string_view argument);

// Resolves at::_ops struct names to op names using the schemas seen.
class OpNameResolver {
 public:
  void add_schema(const OpName& op);
  // Also keeps the schema's arguments and returns. libtorch's .rodata holds
  // several texts for some ops (the registered schema, and copies from the
  // JIT's tables that differ in defaults, argument names or even alias
  // annotations); each distinct one is kept, in the order added.
  void add_schema(const Schema& schema);
  size_t schema_count() const { return by_struct_.size(); }

  // Every distinct full schema added for <S> (exact struct name match; no
  // fallback), empty when there is none.
  const std::vector<Schema>& schemas(std::string_view struct_name) const;

  // Exact schema match first; otherwise the longest prefix before an `_`
  // that is a known op name becomes the name and the rest the overload
  // (erfinv_out -> erfinv.out); otherwise the whole struct name is the name.
  OpName resolve(std::string_view struct_name) const;

 private:
  std::unordered_map<std::string, OpName> by_struct_;
  std::unordered_map<std::string, std::vector<Schema>> full_by_struct_;
  std::unordered_set<std::string> names_;
};

}  // namespace gpuprof
