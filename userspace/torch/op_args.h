// op_args.h: where the tensor arguments of at::_ops::<op>::call are at its
// first instruction (record --record-shapes).
//
// torch.profiler's record_shapes prints one entry per schema argument: the
// sizes of a Tensor or of an engaged optional Tensor, [] for everything else
// (tensor lists, scalars, int lists...). So only `at::Tensor const&`,
// `at::Tensor&` and `optional<at::Tensor> const&` parameters are located;
// the others are classified only so that the later ones are located right.
//
// The locations follow the x86-64 System V ABI (and the Itanium C++ ABI for
// class types) from the C++ parameter types in the mangled name:
//   - any reference, and any class with a non-trivial copy or move
//     constructor or destructor passed by value (c10::SymInt,
//     c10::optional<at::Generator>, c10::Storage, c10::optional<SymInt>,
//     and c10::optional<c10::string_view>, whose copy constructor is
//     user-provided: "invisible reference"): a pointer, one INTEGER
//     register;
//   - integers, bool, enums and small trivially copyable aggregates (<= 8
//     bytes): one INTEGER register;
//   - double: one SSE register (xmm0..7), never an INTEGER one;
//   - 16-byte trivially copyable aggregates of two INTEGER eightbytes
//     (ArrayRef, string_view, OptionalArrayRef, c10::optional<int64_t>, and
//     c10::optional<double>: {bool, union {char; double}}, whose union
//     classifies as INTEGER): two INTEGER registers, or, when fewer than two
//     are left, two stack words, while later arguments may still take the
//     register that was left;
//   - std::optional<double> ({double, bool}): one SSE and one INTEGER
//     register, or two stack words when either kind is exhausted;
//   - 17..24-byte trivially copyable aggregates (std::optional<ArrayRef>,
//     c10::OptionalArrayRef over std::optional): three stack words;
//   - the first six INTEGER arguments go in rdi, rsi, rdx, rcx, r8, r9, the
//     rest on the stack, in order, each rounded up to 8 bytes.
// A return value that is returned in memory (at::Tensor, std::tuple, even
// of references, std::vector, c10::Scalar, std::string, c10::SymInt) takes
// rdi for its hidden pointer. The return type is not in the mangled name: it
// comes from the schema's returns ("Tensor", "Tensor(a!)", "(Tensor,
// Tensor)", "()").
//
// Checked against g++ itself (see tests/unit/op_args_test.cpp): every ok
// plan of Debian's libtorch 1.13 matches where the compiler puts each
// argument when it calls that op's ::call.
//
// Nothing is guessed: an unknown parameter type, an unrecognised return, a
// schema that does not match the signature or more than GP_MAX_TENSOR_ARGS
// tensors make the plan !ok (that op's shapes are not recorded).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "op_tracer_abi.h"
#include "torch/op_names.h"

namespace gpuprof {

struct TensorArgSlot {
  uint32_t arg_index = 0;  // position among the C++ parameters / schema arguments
  gp_tensor_arg_kind kind = GP_ARG_TENSOR;
  uint8_t where = 0;  // 0..5 rdi..r9; >= GP_ARG_IN_STACK: the word at rsp + 8 * (where - 5)
  bool operator==(const TensorArgSlot&) const = default;
};

struct OpArgPlan {
  bool ok = false;  // false: this op's shapes cannot be read; `why` says why (one line)
  std::string why;
  uint32_t arg_count = 0;              // C++ parameters == schema arguments, in order
  std::vector<TensorArgSlot> tensors;  // in argument order
};

// libtorch's c10::optional is its own class up to 2.x, and std::optional
// after (the mangled names then say std::optional). The two differ where the
// name does not show it: c10::OptionalArrayRef<T> wraps an optional<ArrayRef>
// of 16 bytes (c10's keeps an ArrayRef's emptiness in its data pointer; two
// registers) or 24 (std's; on the stack, 3 words). So the library decides,
// not the symbol.
enum class OptionalAbi { c10_optional, std_optional };

// std_optional when any of the library's at::_ops::*::call symbols has a
// std::optional parameter.
OptionalAbi optional_abi_of(std::span<const std::string_view> call_symbols);

// "_ZN2at4_ops4relu4callERKNS_6TensorE" -> {"at::Tensor const&"}: the
// demangled parameter types, split at top-level commas. nullopt when the
// name does not demangle to a function.
std::optional<std::vector<std::string>> demangled_parameters(std::string_view mangled);

// Whether the C++ return type for a schema's returns is returned in memory
// (through a hidden pointer in rdi). nullopt when the returns are not
// recognised.
std::optional<bool> returns_in_memory(std::string_view schema_returns);

// mangled: the at::_ops::<S>::call symbol, e.g.
//   _ZN2at4_ops6conv2d4callERKNS_6TensorES4_RKN3c108optionalIS2_EENS5_8ArrayRefIlEESB_SB_l
// schema_returns: the schema's text after "->", trimmed; nullopt when the op
// has no schema (the plan is then !ok).
// abi: the library's (optional_abi_of); a symbol with a std::optional in its
// own signature is planned as std_optional whatever abi says.
OpArgPlan plan_op_args(std::string_view mangled, std::optional<std::string_view> schema_returns,
                       OptionalAbi abi = OptionalAbi::c10_optional);

// The same from the full schema texts found for the op (libtorch 1.13 has
// several for some ops: OpNameResolver::schemas()). A schema is used only
// if it matches the signature: as many arguments as C++ parameters, and a
// Tensor where the signature has at::Tensor const&, a Tensor(a!) where it
// has at::Tensor&, a Tensor? where it has optional<at::Tensor> const&, and
// no tensor elsewhere. The matching schemas must agree on how the return is
// passed. !ok when none matches ("schema has N arguments, signature M").
OpArgPlan plan_op_args(std::string_view mangled, std::span<const Schema> schemas,
                       OptionalAbi abi = OptionalAbi::c10_optional);

// The BPF form; count 0 when !ok or when the op has no tensor argument.
gp_shape_plan to_bpf_plan(const OpArgPlan& plan);

}  // namespace gpuprof
