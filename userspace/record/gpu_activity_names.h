// gpu_activity_names.h: what a GPU activity is called, in torch.profiler's
// words.
//
// torch.profiler gets its GPU rows from kineto, which names CUPTI's records:
// a kernel by its demangled name ("void at::native::vectorized_elementwise_kernel<4, ...>(...)"),
// a copy as "Memcpy HtoD (Pageable -> Device)", a fill as "Memset (Device)".
// gpuprof's kernel rows use the same names so that tables line up row for
// row with torch's.
//
// The shim hands copies and fills over with their CUPTI kinds packed above
// the byte count (cupti_shim/gpuprof_cupti_probes.h, gpuprof:activity's
// bytes argument); GpuActivity::bytes keeps that packed value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuprof {

// kineto's demangle(): abi::__cxa_demangle of CUPTI's (mangled) kernel name;
// the name itself when it is longer than 1024 bytes (kineto does not try)
// or does not demangle (a C kernel "add_kernel", a Triton "triton_poi_...").
std::string kernel_activity_name(std::string_view cupti_name);

// "Memcpy HtoD (Pageable -> Device)" from a packed memcpy bytes value.
std::string memcpy_activity_name(uint64_t packed_bytes);

// "Memset (Device)" from a packed memset bytes value.
std::string memset_activity_name(uint64_t packed_bytes);

// The byte count of a packed memcpy/memset bytes value.
uint64_t activity_byte_count(uint64_t packed_bytes);

}  // namespace gpuprof
