#include "torch/op_args.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <memory>

#include "base/result.h"
#include "torch/bracket_text.h"

namespace gpuprof {
namespace {

// How one parameter is passed.
enum class ArgClass {
  integer,       // one INTEGER eightbyte (includes pointers and invisible references)
  sse,           // one SSE eightbyte (double)
  integer_pair,  // 16 bytes, two INTEGER eightbytes
  integer_sse,   // 16 bytes, one SSE and one INTEGER eightbyte (std::optional<double>)
  memory3,       // 17..24 bytes, trivially copyable: on the stack, 3 words
};

struct ParamInfo {
  ArgClass cls = ArgClass::integer;
  std::optional<gp_tensor_arg_kind> tensor;  // a tensor argument torch.profiler prints
};

struct KnownType {
  std::string_view type;
  ArgClass cls;
};

// By-value types whose layout is the same whichever optional libtorch uses.
constexpr KnownType kCommonByValue[] = {
    {"long", ArgClass::integer},
    {"int", ArgClass::integer},
    {"bool", ArgClass::integer},
    {"c10::ScalarType", ArgClass::integer},
    {"c10::Layout", ArgClass::integer},
    {"c10::MemoryFormat", ArgClass::integer},
    {"c10::QScheme", ArgClass::integer},
    {"c10::Device", ArgClass::integer},  // {int8 type, int8 index}
    {"at::Dimname", ArgClass::integer},  // {Symbol (uint32), NameType}: 8 bytes
    // Non-trivial copy constructor and destructor: passed by invisible
    // reference (a pointer to a copy the caller made).
    {"c10::SymInt", ArgClass::integer},
    {"c10::Storage", ArgClass::integer},
    {"double", ArgClass::sse},
    {"c10::basic_string_view<char>",
     ArgClass::integer_pair},  // {const char*, size_t}, trivial copy ctor
    {"std::basic_string_view<char, std::char_traits<char> >", ArgClass::integer_pair},
    {"c10::Stream", ArgClass::integer_pair},  // {Device, int64_t id}
};

// By-value optionals, by the type they hold, with their class under each
// optional (nullopt: not seen there). libtorch up to 2.2 has its own
// c10::optional (checked against 1.13); 2.3+ uses std::optional (the
// mangled names say std::optional): libstdc++'s {T, bool}, trivially
// copyable when T is.
struct KnownOptional {
  std::string_view held;
  std::optional<ArgClass> under_c10, under_std;
};
constexpr KnownOptional kOptionalByValue[] = {
    {"c10::ScalarType", ArgClass::integer, ArgClass::integer},
    {"bool", ArgClass::integer, ArgClass::integer},
    {"c10::Layout", ArgClass::integer, ArgClass::integer},
    {"c10::MemoryFormat", ArgClass::integer, ArgClass::integer},
    {"c10::Device", ArgClass::integer, ArgClass::integer},  // c10: 3 bytes
    {"c10::QScheme", ArgClass::integer, ArgClass::integer},
    {"c10::SymInt", ArgClass::integer, ArgClass::integer},    // invisible reference
    {"at::Generator", ArgClass::integer, ArgClass::integer},  // invisible reference
    // c10::optional<T> has a user-provided copy constructor unless T is
    // trivially copyable, and c10::string_view is not (a user-provided
    // operator=): this 24-byte c10::optional goes by invisible reference,
    // not on the stack.
    {"c10::basic_string_view<char>", ArgClass::integer, ArgClass::memory3},
    {"std::basic_string_view<char, std::char_traits<char> >", std::nullopt, ArgClass::memory3},
    // c10: {bool, int64_t}; std: {int64_t, bool}.
    {"long", ArgClass::integer_pair, ArgClass::integer_pair},
    // c10: {bool, union {unsigned char dummy; double value;}}: the union's
    // eightbyte merges INTEGER (the char) with SSE (the double) into
    // INTEGER, so this takes two INTEGER registers and no SSE one. std:
    // {double, bool}.
    {"double", ArgClass::integer_pair, ArgClass::integer_sse},
};

// The class of a by-value "c10::optional<T>" (std_optional false) or
// "std::optional<T>" (true) of a T in kOptionalByValue, spelled as the
// demangler does ("> >" where T ends in '>').
std::optional<ArgClass> optional_by_value(std::string_view type, bool std_optional) {
  const std::string_view optional = std_optional ? "std::optional<" : "c10::optional<";
  if (!type.starts_with(optional)) return std::nullopt;
  type.remove_prefix(optional.size());
  for (const KnownOptional& known : kOptionalByValue)
    if (type.starts_with(known.held) &&
        type.substr(known.held.size()) == (known.held.ends_with('>') ? " >" : ">"))
      return std_optional ? known.under_std : known.under_c10;
  return std::nullopt;
}

// The C++ parameter types seen in libtorch's at::_ops::*::call, classified
// for the SysV ABI. std_optional: the library's c10::optional is
// std::optional, which changes the size of c10::OptionalArrayRef.
std::optional<ParamInfo> classify_parameter(std::string_view type, bool std_optional) {
  // References: a pointer. Only these three are tensors torch.profiler
  // prints sizes for; c10::List<optional<Tensor>>, IListRef, Scalar... are
  // printed as [].
  if (type.ends_with("&")) {
    std::string_view base = type;
    while (base.ends_with("&")) base.remove_suffix(1);
    base = trim_spaces(base);
    if (base.ends_with(" const")) base = trim_spaces(base.substr(0, base.size() - 6));
    if (base == "at::Tensor") return ParamInfo{ArgClass::integer, GP_ARG_TENSOR};
    if (base == "c10::optional<at::Tensor>")
      return ParamInfo{ArgClass::integer, GP_ARG_OPT_TENSOR_C10};
    if (base == "std::optional<at::Tensor>")
      return ParamInfo{ArgClass::integer, GP_ARG_OPT_TENSOR_STD};
    return ParamInfo{ArgClass::integer, std::nullopt};
  }
  auto template_of = [&](std::string_view prefix) {
    return type.starts_with(prefix) && type.ends_with(">");
  };
  // ArrayRef: {const T*, size_t}, trivially copyable.
  if (template_of("c10::ArrayRef<")) return ParamInfo{ArgClass::integer_pair, std::nullopt};
  // OptionalArrayRef wraps an optional<ArrayRef<T>>: 16 bytes with
  // c10::optional (which stores an ArrayRef's emptiness in its data
  // pointer), 24 with std::optional.
  if (template_of("c10::OptionalArrayRef<"))
    return ParamInfo{std_optional ? ArgClass::memory3 : ArgClass::integer_pair, std::nullopt};
  if (template_of("c10::optional<c10::ArrayRef<"))
    return ParamInfo{ArgClass::integer_pair, std::nullopt};
  if (template_of("std::optional<c10::ArrayRef<"))
    return ParamInfo{ArgClass::memory3, std::nullopt};
  // std::array<bool, N>: N bytes, trivially copyable.
  if (type.starts_with("std::array<bool, ") && type.ends_with("ul>")) {
    std::string_view n = type.substr(17, type.size() - 17 - 3);
    if (n.size() == 1 && n[0] >= '1' && n[0] <= '8')
      return ParamInfo{ArgClass::integer, std::nullopt};
    return std::nullopt;
  }
  for (const KnownType& known : kCommonByValue)
    if (known.type == type) return ParamInfo{known.cls, std::nullopt};
  if (auto cls = optional_by_value(type, std_optional)) return ParamInfo{*cls, std::nullopt};
  return std::nullopt;
}

// Strips a schema return's name: "Tensor(a!) values" -> "Tensor(a!)".
std::string_view return_type(std::string_view one) {
  one = trim_spaces(one);
  int depth = 0;
  for (size_t i = 0; i < one.size(); i++) {
    if (one[i] == '(' || one[i] == '[')
      depth++;
    else if (one[i] == ')' || one[i] == ']')
      depth--;
    else if (depth == 0 && std::isspace(static_cast<unsigned char>(one[i])))
      return one.substr(0, i);
  }
  return one;
}

// One return type: nullopt when unknown, else whether it is in memory.
std::optional<bool> single_return_in_memory(std::string_view type) {
  if (type.ends_with("[]")) {
    // std::vector<...> (Tensor[], int[], Tensor(a)[], SymInt[]...); a
    // mutable list (Tensor(a!)[]) is not returned by any at::_ops::call.
    if (type.find('!') != std::string_view::npos) return std::nullopt;
    return true;
  }
  if (type.starts_with("Tensor")) {
    std::string_view alias = type.substr(6);
    if (alias.empty()) return true;  // at::Tensor
    if (alias.starts_with("(") && alias.ends_with(")") &&
        alias.find_first_of("?[") == std::string_view::npos)
      // Tensor(a!): at::Tensor& in rax; Tensor(a): a view, at::Tensor by value.
      return alias.find('!') == std::string_view::npos;
    return std::nullopt;
  }
  // Scalars returned in rax / xmm0.
  for (std::string_view t :
       {"bool", "int", "float", "ScalarType", "Layout", "MemoryFormat", "Device", "QScheme"})
    if (type == t) return false;
  // Class types returned in memory: c10::Scalar (32 bytes), std::string,
  // c10::SymInt (non-trivial copy constructor and destructor).
  for (std::string_view t : {"Scalar", "str", "SymInt"})
    if (type == t) return true;
  return std::nullopt;
}

std::optional<gp_tensor_arg_kind> schema_tensor_kind(std::string_view type, bool* mutable_tensor) {
  *mutable_tensor = false;
  if (!type.starts_with("Tensor") || type.find('[') != std::string_view::npos) return std::nullopt;
  std::string_view rest = type.substr(6);
  const bool optional = rest.ends_with("?");
  if (optional) rest.remove_suffix(1);
  if (!rest.empty() && !(rest.starts_with("(") && rest.ends_with(")"))) return std::nullopt;
  if (optional) return GP_ARG_OPT_TENSOR_C10;  // C10 or STD: compared loosely below
  *mutable_tensor = rest.find('!') != std::string_view::npos;
  return GP_ARG_TENSOR;
}

// Whether a schema's arguments match the C++ parameters; the error says
// why not.
Result<void> schema_matches(const Schema& schema, const std::vector<std::string>& params, bool std_optional) {
  if (schema.arguments.size() != params.size())
    return Error("schema has " + std::to_string(schema.arguments.size()) + " arguments, signature " +
                 std::to_string(params.size()));
  for (size_t i = 0; i < params.size(); i++) {
    std::string_view type = schema_argument_type(schema.arguments[i]);
    bool schema_mutable = false;
    auto schema_kind = schema_tensor_kind(type, &schema_mutable);
    auto param = classify_parameter(params[i], std_optional);
    std::optional<gp_tensor_arg_kind> cpp_kind = param ? param->tensor : std::nullopt;
    const bool cpp_optional = cpp_kind && *cpp_kind != GP_ARG_TENSOR;
    const bool cpp_mutable = cpp_kind == GP_ARG_TENSOR && !params[i].ends_with("const&");
    bool same = schema_kind.has_value() == cpp_kind.has_value();
    // A mutable at::Tensor& is always a Tensor(a!) in the schema; the
    // reverse does not hold: torchgen passes some mutated tensors as const&
    // (resize_, as_strided_, the out= of a few ops).
    if (same && schema_kind)
      same = (*schema_kind != GP_ARG_TENSOR) == cpp_optional &&
             (cpp_optional || schema_mutable || !cpp_mutable);
    if (!same)
      return Error("schema argument " + std::to_string(i) + " (" + std::string(type) +
                   ") does not match the parameter " + params[i]);
  }
  return {};
}

// A library cannot mix the two: a std::optional in the symbol settles it.
bool uses_std_optional(std::string_view mangled, OptionalAbi abi) {
  return abi == OptionalAbi::std_optional || mangled.find("St8optional") != std::string_view::npos;
}

}  // namespace

OptionalAbi optional_abi_of(std::span<const std::string_view> call_symbols) {
  for (std::string_view symbol : call_symbols)
    if (symbol.find("St8optional") != std::string_view::npos) return OptionalAbi::std_optional;
  return OptionalAbi::c10_optional;
}

std::optional<std::vector<std::string>> demangled_parameters(std::string_view mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(std::string(mangled).c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return std::nullopt;
  std::string_view text = demangled.get();
  // "at::_ops::relu::call(at::Tensor const&)": the list is in the last
  // top-level parentheses (a function name has none of its own here).
  if (!text.ends_with(")")) return std::nullopt;
  int depth = 0;
  size_t open = std::string_view::npos;
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] == ')')
      depth++;
    else if (text[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return std::nullopt;
  std::string_view list = trim_spaces(text.substr(open + 1, text.size() - open - 2));
  std::vector<std::string> params;
  if (list.empty() || list == "void") return params;
  auto parts = split_top_level(list, kCppBrackets);
  if (!parts) return std::nullopt;
  for (std::string_view part : *parts) {
    if (part.empty()) return std::nullopt;
    params.emplace_back(part);
  }
  return params;
}

std::optional<bool> returns_in_memory(std::string_view returns) {
  returns = trim_spaces(returns);
  if (returns.starts_with("(")) {
    if (!returns.ends_with(")")) return std::nullopt;
    std::string_view inner = trim_spaces(returns.substr(1, returns.size() - 2));
    if (inner.empty()) return false;  // () is void
    auto parts = split_top_level(inner, kCppBrackets);
    if (!parts) return std::nullopt;
    // (T) is one T; two or more are a std::tuple, returned in memory (even
    // std::tuple<at::Tensor&, at::Tensor&>: its copy constructor is not
    // trivial in libstdc++).
    if (parts->size() == 1) return single_return_in_memory(return_type((*parts)[0]));
    for (std::string_view part : *parts)
      if (!single_return_in_memory(return_type(part))) return std::nullopt;
    return true;
  }
  return single_return_in_memory(return_type(returns));
}

OpArgPlan plan_op_args(std::string_view mangled, std::optional<std::string_view> schema_returns,
                       OptionalAbi abi) {
  const bool std_optional = uses_std_optional(mangled, abi);
  OpArgPlan plan;
  auto params = demangled_parameters(mangled);
  if (!params) {
    plan.why = "cannot demangle the signature";
    return plan;
  }
  plan.arg_count = static_cast<uint32_t>(params->size());
  if (!schema_returns) {
    plan.why = "no schema";
    return plan;
  }
  auto hidden = returns_in_memory(*schema_returns);
  if (!hidden) {
    plan.why = "unsupported return " + std::string(*schema_returns);
    return plan;
  }
  constexpr int kIntegerRegisters = 6, kSseRegisters = 8;
  int integer_used = *hidden ? 1 : 0;  // the hidden return pointer is in rdi
  int sse_used = 0;
  int stack_words = 0;
  for (size_t i = 0; i < params->size(); i++) {
    const std::string& type = (*params)[i];
    auto info = classify_parameter(type, std_optional);
    if (!info) {
      plan.why = "unsupported parameter type " + type;
      plan.tensors.clear();
      return plan;
    }
    int where = -1;
    switch (info->cls) {
      case ArgClass::integer:
        if (integer_used < kIntegerRegisters)
          where = integer_used++;
        else
          where = GP_ARG_IN_STACK + stack_words++;
        break;
      case ArgClass::sse:
        if (sse_used < kSseRegisters)
          sse_used++;
        else
          stack_words++;
        break;
      case ArgClass::integer_pair:
        // Both eightbytes in registers or the whole argument on the stack.
        if (integer_used + 2 <= kIntegerRegisters)
          integer_used += 2;
        else
          stack_words += 2;
        break;
      case ArgClass::integer_sse:
        if (integer_used < kIntegerRegisters && sse_used < kSseRegisters)
          integer_used++, sse_used++;
        else
          stack_words += 2;
        break;
      case ArgClass::memory3:
        stack_words += 3;
        break;
    }
    if (!info->tensor) continue;
    if (plan.tensors.size() == GP_MAX_TENSOR_ARGS) {
      plan.why = "more than " + std::to_string(GP_MAX_TENSOR_ARGS) + " tensor arguments";
      plan.tensors.clear();
      return plan;
    }
    if (where < 0 || where > 255) {
      plan.why = "tensor argument " + std::to_string(i) + " out of reach";
      plan.tensors.clear();
      return plan;
    }
    plan.tensors.push_back(
        TensorArgSlot{static_cast<uint32_t>(i), *info->tensor, static_cast<uint8_t>(where)});
  }
  plan.ok = true;
  return plan;
}

OpArgPlan plan_op_args(std::string_view mangled, std::span<const Schema> schemas, OptionalAbi abi) {
  const bool std_optional = uses_std_optional(mangled, abi);
  auto params = demangled_parameters(mangled);
  if (!params) {
    OpArgPlan plan;
    plan.why = "cannot demangle the signature";
    return plan;
  }
  if (schemas.empty()) return plan_op_args(mangled, std::nullopt, abi);
  const Schema* chosen = nullptr;
  std::optional<bool> chosen_hidden;
  std::string first_mismatch;
  for (const Schema& schema : schemas) {
    if (const Result<void> matches = schema_matches(schema, *params, std_optional); !matches) {
      if (first_mismatch.empty()) first_mismatch = matches.error();
      continue;
    }
    auto hidden = returns_in_memory(schema.returns);
    if (!chosen) {
      chosen = &schema;
      chosen_hidden = hidden;
    } else if (hidden != chosen_hidden) {
      OpArgPlan plan;
      plan.arg_count = static_cast<uint32_t>(params->size());
      plan.why = "schemas disagree on the return: " + chosen->returns + " or " + schema.returns;
      return plan;
    }
  }
  if (!chosen) {
    OpArgPlan plan;
    plan.arg_count = static_cast<uint32_t>(params->size());
    plan.why = first_mismatch;
    return plan;
  }
  return plan_op_args(mangled, std::string_view(chosen->returns), abi);
}

gp_shape_plan to_bpf_plan(const OpArgPlan& plan) {
  gp_shape_plan out{};
  if (!plan.ok) return out;
  for (const TensorArgSlot& slot : plan.tensors) {
    if (out.count == GP_MAX_TENSOR_ARGS) return gp_shape_plan{};
    out.args[out.count].kind = static_cast<__u8>(slot.kind);
    out.args[out.count].where = slot.where;
    out.count++;
  }
  return out;
}

}  // namespace gpuprof
