// gpu_activity_names.cpp: kineto's names for CUPTI records (see the header).
#include "record/gpu_activity_names.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace gpuprof {
namespace {

// kineto's kMaxSymbolSize: longer names are printed mangled.
constexpr size_t kMaxDemangledInput = 1024;

// The bit fields of gpuprof:activity's bytes argument.
constexpr uint64_t kByteCountMask = (uint64_t{1} << 40) - 1;
uint8_t copy_kind(uint64_t packed) { return static_cast<uint8_t>(packed >> 56); }
uint8_t source_kind(uint64_t packed) { return static_cast<uint8_t>(packed >> 48); }
uint8_t destination_kind(uint64_t packed) { return static_cast<uint8_t>(packed >> 40); }

// kineto's memcpyKindString (CUpti_ActivityMemcpyKind 1..10).
std::string_view copy_kind_name(uint8_t kind) {
  static constexpr std::array<std::string_view, 11> kNames = {
      "<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < kNames.size() ? kNames[kind] : kNames[0];
}

// kineto's memoryKindString (CUpti_ActivityMemoryKind 0..7).
std::string_view memory_kind_name(uint8_t kind) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  return kind < kNames.size() ? kNames[kind] : "Unrecognized";
}

}  // namespace

std::string kernel_activity_name(std::string_view cupti_name) {
  std::string name(cupti_name);
  if (name.size() > kMaxDemangledInput) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return name;
  return demangled.get();
}

std::string memcpy_activity_name(uint64_t packed_bytes) {
  return "Memcpy " + std::string(copy_kind_name(copy_kind(packed_bytes))) + " (" +
         std::string(memory_kind_name(source_kind(packed_bytes))) + " -> " +
         std::string(memory_kind_name(destination_kind(packed_bytes))) + ")";
}

std::string memset_activity_name(uint64_t packed_bytes) {
  return "Memset (" + std::string(memory_kind_name(destination_kind(packed_bytes))) + ")";
}

uint64_t activity_byte_count(uint64_t packed_bytes) { return packed_bytes & kByteCountMask; }

}  // namespace gpuprof
