// libFuzzer target: the parsers of text gpuprof reads from libraries and
// targets: mangled at::_ops symbols, schema strings in libtorch's .rodata,
// kernel names from CUPTI, demangled native symbols, and CPython line
// tables and dicts read from the target's memory. The input is split at the
// first two newlines into a symbol, a schema and the rest (a line table, and
// a pretend target memory for the dict reader).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "record/gpu_activity_names.h"
#include "symbols/native_symbolizer.h"
#include "torch/op_args.h"
#include "torch/op_names.h"
#include "python/python_code.h"
#include "python/python_dicts.h"

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

  // The same bytes as a target's memory at kBase: whatever its pointers and
  // headers say, the dict reader stays inside it and ends.
  constexpr uint64_t kBase = 0x10000;
  const TargetMemoryReader read = [&](uint64_t address, void* buffer, size_t len) {
    if (address < kBase || address - kBase > table.size() || len > table.size() - (address - kBase)) return false;
    std::memcpy(buffer, bytes + (address - kBase), len);
    return true;
  };
  for (int minor : {11, 12}) {
    PythonDictReader reader(read, *python_offsets_for(3, minor));
    for (uint64_t at : {0, 8, 32, 64}) {
      (void)reader.dict_items(kBase + at);
      (void)reader.instance_attribute(kBase + at, "_modules");
      (void)reader.str(kBase + at, 256);
    }
  }
  (void)parse_dict_keys_header(std::span<const uint8_t>(bytes, table.size()), *python_offsets_for(3, 11));
  return 0;
}
