// libFuzzer target: the parsers of text gpuprof reads from libraries and
// targets: mangled at::_ops symbols, schema strings in libtorch's .rodata,
// kernel names from CUPTI, demangled native symbols, and CPython line
// tables read from the target's memory. The input is split at the first two
// newlines into a symbol, a schema and the rest (a line table).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "record/gpu_activity_names.h"
#include "symbols/native_symbolizer.h"
#include "torch/op_args.h"
#include "torch/op_names.h"
#include "python/python_code.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuprof;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl1 = input.find('\n');
  const std::string_view symbol = input.substr(0, nl1);
  const std::string_view rest1 = nl1 == std::string_view::npos ? std::string_view() : input.substr(nl1 + 1);
  const size_t nl2 = rest1.find('\n');
  const std::string_view schema_text = rest1.substr(0, nl2);
  const std::string_view table = nl2 == std::string_view::npos ? std::string_view() : rest1.substr(nl2 + 1);

  (void)dispatcher_call_struct(symbol);
  (void)demangled_parameters(symbol);
  (void)short_function_name(demangle_function_name(symbol));
  (void)short_function_name(symbol);
  (void)demangle_full(symbol);
  (void)kernel_activity_name(symbol);
  const std::vector<std::string_view> symbols = {symbol};
  const OptionalAbi abi = optional_abi_of(symbols);

  (void)parse_schema(schema_text);
  (void)returns_in_memory(schema_text);
  if (auto schema = parse_full_schema(schema_text)) {
    for (const std::string& argument : schema->arguments) (void)schema_argument_type(argument);
    (void)returns_in_memory(schema->returns);
    const std::vector<Schema> schemas = {*schema};
    (void)to_bpf_plan(plan_op_args(symbol, schemas, abi));
    (void)plan_op_args(symbol, std::string_view(schema->returns), abi);
    OpNameResolver resolver;
    resolver.add_schema(schema->op);
  }
  (void)plan_op_args(symbol, std::optional<std::string_view>(), abi);

  const auto* bytes = reinterpret_cast<const uint8_t*>(table.data());
  for (int64_t index : {0, 1, 7, 64, 1000})
    (void)python_line_for_index(std::span<const uint8_t>(bytes, table.size()), 1, index);
  return 0;
}
