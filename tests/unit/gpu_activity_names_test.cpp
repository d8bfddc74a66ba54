// Tests of the GPU activity names: kineto's (torch.profiler's) names for
// CUPTI's kernel, memcpy and memset records.
#include "record/gpu_activity_names.h"

#include <gtest/gtest.h>

#include <string>

// The shim packs, gpuprof unpacks: the test holds the two sides together.
#include "../../cupti_shim/gpuprof_cupti_probes.h"

namespace gpuprof {
namespace {

TEST(GpuActivityNames, KernelsAreDemangledAsKinetoDoes) {
  EXPECT_EQ(kernel_activity_name("_ZN12gpuprof_test12scale_kernelIfEEvPT_S1_i"),
            "void gpuprof_test::scale_kernel<float>(float*, float, int)");
  // Not mangled (a C or Triton kernel, a cuBLAS one): kept.
  EXPECT_EQ(kernel_activity_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(kernel_activity_name("ampere_sgemm_32x32_sliced1x4_tn"), "ampere_sgemm_32x32_sliced1x4_tn");
  EXPECT_EQ(kernel_activity_name("_Z"), "_Z");  // demangling fails: kept
  EXPECT_EQ(kernel_activity_name(""), "");
}

TEST(GpuActivityNames, NamesLongerThan1024BytesStayMangled) {
  // kineto's kMaxSymbolSize: a name of 1024 bytes is demangled, 1025 is not.
  auto mangled_of_length = [](size_t length) {
    // _ZN<len>name<n>xxx..E: a nested name whose last part pads to `length`.
    std::string head = "_ZN4test";
    std::string tail = "Ev";
    size_t rest = length - head.size() - tail.size();
    // "<digits><ident>" of total `rest` characters
    for (size_t digits = 1; digits <= 4; ++digits) {
      size_t ident = rest - digits;
      if (std::to_string(ident).size() == digits) return head + std::to_string(ident) + std::string(ident, 'k') + tail;
    }
    return std::string();
  };
  const std::string at_limit = mangled_of_length(1024), over = mangled_of_length(1025);
  ASSERT_EQ(at_limit.size(), 1024u);
  ASSERT_EQ(over.size(), 1025u);
  EXPECT_EQ(kernel_activity_name(at_limit).substr(0, 12), "test::kkkkkk");
  EXPECT_EQ(kernel_activity_name(over), over);
}

TEST(GpuActivityNames, CopiesAndFillsAreNamedFromTheShimsPackedKinds) {
  // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, PAGEABLE -> DEVICE.
  const uint64_t htod = gpuprof_pack_memcpy(4096, 1, 1, 3);
  EXPECT_EQ(memcpy_activity_name(htod), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(activity_byte_count(htod), 4096u);
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(1, 2, 3, 2)), "Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(1, 8, 3, 3)), "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(1, 10, 7, 6)), "Memcpy PtoP (Managed Static -> Device Static)");
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(1, 0, 0, 9)), "Memcpy <unknown> (Unknown -> Unrecognized)");
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(1, 200, 5, 4)), "Memcpy <unknown> (Managed -> Array)");
  const uint64_t fill = gpuprof_pack_memset(1 << 20, 3);
  EXPECT_EQ(memset_activity_name(fill), "Memset (Device)");
  EXPECT_EQ(activity_byte_count(fill), 1u << 20);
  EXPECT_EQ(memset_activity_name(gpuprof_pack_memset(8, 5)), "Memset (Managed)");
}

TEST(GpuActivityNames, ByteCountsKeepFortyBits) {
  const uint64_t big = (uint64_t{1} << 40) - 1;
  EXPECT_EQ(activity_byte_count(gpuprof_pack_memcpy(big, 1, 1, 3)), big);
  EXPECT_EQ(activity_byte_count(gpuprof_pack_memcpy(big + 1, 1, 1, 3)), 0u);  // cut, kinds intact
  EXPECT_EQ(memcpy_activity_name(gpuprof_pack_memcpy(big + 1, 1, 1, 3)), "Memcpy HtoD (Pageable -> Device)");
}

}  // namespace
}  // namespace gpuprof
