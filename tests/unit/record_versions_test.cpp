// record_versions_test.cpp: the record format's versions (record_file.h,
// docs/record-file.md): a version 5 file written by the version 5 writer
// still reads, item for item; the OP_EVENTS packing round-trips; and the
// chunk table agrees with the spec document.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "record/chunk_specs.h"
#include "record/packed_events.h"
#include "record/record_file.h"
#include "test_files.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

using test::golden_dir;
using test::source_dir;

// tests/golden/record_v5.gpuprof, written by gpuprof's version 5 writer
// (tests/golden/make_record_v5.cpp says with which calls): every chunk kind
// of a single-process recording, compressed nowhere, events raw.
TEST(RecordVersions, ReadsAVersion5FileItemForItem) {
  std::string err;
  auto rec = noting_error(read_recording((golden_dir() / "record_v5.gpuprof").string()), &err);
  ASSERT_TRUE(rec) << err;
  EXPECT_EQ(rec->format_version, 5u);
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->process.pid, 4242);
  EXPECT_EQ(rec->process.cmdline, "python3 train.py");
  ASSERT_EQ(rec->ops.size(), 2u);
  EXPECT_EQ(rec->ops[1].name, "aten::mm");
  EXPECT_EQ(rec->options, (RecordOptions{true, true, 99, true, true}));
  const std::vector<gp_event> events = {
      {5000000000ULL, 0x7ffd1000, 101, 4242, 0, GP_EV_OP_ENTRY, 0},
      {5000000300ULL, 0x7ffd0f80, 101, 4242, 1, GP_EV_OP_ENTRY, 0},
      {5000000900ULL, 0x7ffd0f80, 101, 4242, 1, GP_EV_OP_EXIT, 0},
      {5000001000ULL, 0x7ffd1000, 101, 4242, 0, GP_EV_OP_EXIT, 0},
      {5000002000ULL, 0x7ffe2000, 102, 4242, 0, GP_EV_OP_ENTRY, 0},
      {5000002500ULL, 0x7ffe2000, 102, 4242, 0, GP_EV_OP_EXIT, 0}};
  ASSERT_EQ(rec->events.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(std::memcmp(&rec->events[i], &events[i], sizeof(gp_event)), 0) << "event " << i;
  ASSERT_EQ(rec->shapes.size(), 1u);
  EXPECT_EQ(rec->shapes[0], (InputShapes{std::vector<int64_t>{2, 3}, std::nullopt}));
  EXPECT_EQ(rec->entry_shapes, (std::vector<EntryShapes>{{0, 0}, {4, 0}}));
  ASSERT_EQ(rec->mem_events.size(), 1u);
  EXPECT_EQ(rec->mem_events[0].bytes, 4096);
  EXPECT_EQ(rec->sample_frames, (std::vector<std::string>{"train.py(42): main", "libtorch_cpu.so!at::native::add"}));
  EXPECT_EQ(rec->sample_stacks, (std::vector<std::vector<uint32_t>>{{0}, {0, 1}}));
  EXPECT_EQ(rec->samples, (std::vector<CpuSample>{{5000000500ULL, 101, 1, true, 0}}));
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{0, 0}}));
  EXPECT_EQ(rec->sample_kernel_stacks, (std::vector<SampleKernelStack>{{0, 1}}));
  EXPECT_EQ(rec->launch_names, (std::vector<std::string>{"void kernel<float>()"}));
  ASSERT_EQ(rec->launches.size(), 1u);
  EXPECT_EQ(rec->launches[0].block[0], 128u);
  EXPECT_EQ(rec->gpu_correlations, (std::vector<GpuCorrelation>{{5000000600ULL, 77, 101, 211, 2}}));
  ASSERT_EQ(rec->gpu_activities.size(), 1u);
  EXPECT_EQ(rec->gpu_activities[0].end_ns, 5000001800ULL);
  EXPECT_EQ(rec->cuda_runtime, (CudaRuntimeInfo{"/usr/lib/libcudart.so.12", 3, 0}));
  EXPECT_EQ(rec->cupti_shim, (CuptiShimInfo{"/opt/shim.so", 1, 0, 0}));
  EXPECT_EQ(rec->thread_names, (std::vector<ThreadName>{{101, "python3"}, {102, "worker"}}));
  EXPECT_EQ(rec->stats.events_recorded, 6u);
  EXPECT_EQ(rec->stats.stop_reason, "target exited");
  EXPECT_EQ(rec->clock.end_monotonic_ns, 6000000000ULL);
}

// Events of a loop on two threads, with the fields packing treats apart:
// a new thread, a pid change, an unchanged sp, GP_NO_OP, a time step back.
std::vector<gp_event> varied_events() {
  std::vector<gp_event> v;
  for (uint32_t i = 0; i < 300; ++i) {
    const uint32_t tid = i % 7 == 0 ? 200 : 100;
    v.push_back({5'000'000'000ULL + i * 997, 0x7ffd00001000ULL - (i % 5) * 0x80, tid, i < 150 ? 4242u : 4343u,
                 i % 11 == 0 ? static_cast<uint32_t>(GP_NO_OP) : i % 40, static_cast<uint16_t>(i % 11 == 0 ? static_cast<uint32_t>(GP_EV_CATCH) : 1 + i % 2), 0});
  }
  v[17].ts_ns = v[16].ts_ns - 5;                                      // before the event before
  v[18].sp = v[16].sp;                                                // as the thread's last
  v.push_back({UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT32_MAX, GP_NO_OP, GP_EV_CUT, 0});  // extremes
  v.push_back({0, 0, 0, 0, 0, GP_EV_OP_EXIT, 0});
  return v;
}

TEST(PackedEvents, RoundTripEveryField) {
  const std::vector<gp_event> events = varied_events();
  std::vector<uint8_t> payload;
  pack_events(events, 12345, payload);
  std::vector<gp_event> back = {gp_event{}};  // appended after what is there
  uint64_t first = 0;
  ASSERT_EQ(unpack_events(payload, &first, back), "");
  EXPECT_EQ(first, 12345u);
  ASSERT_EQ(back.size(), events.size() + 1);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(std::memcmp(&back[i + 1], &events[i], sizeof(gp_event)), 0) << "event " << i;
}

TEST(PackedEvents, ASmallOpLoopPacksUnder8BytesAnEventBeforeCompression) {
  // aten::add calling aten::empty, on one thread, ~1 us apart.
  std::vector<gp_event> loop;
  for (uint64_t i = 0; i < 2048 / 4; ++i) {
    const uint64_t t = 1'000'000'000ULL + i * 4000;
    loop.push_back({t, 0x7ffd1000, 9, 9, 3, GP_EV_OP_ENTRY, 0});
    loop.push_back({t + 600, 0x7ffd0f00, 9, 9, 1, GP_EV_OP_ENTRY, 0});
    loop.push_back({t + 1300, 0x7ffd0f00, 9, 9, 1, GP_EV_OP_EXIT, 0});
    loop.push_back({t + 2100, 0x7ffd1000, 9, 9, 3, GP_EV_OP_EXIT, 0});
  }
  std::vector<uint8_t> payload;
  pack_events(loop, 0, payload);
  // head 1, ts 2, sp 2 or 0 (an exit at its entry's sp: 0), op 1; tid and pid once.
  EXPECT_LE(payload.size(), kPackedEventsPrefix + loop.size() * 6 + 8);
}

TEST(PackedEvents, RefusesMalformedPayloads) {
  std::vector<uint8_t> payload;
  pack_events(varied_events(), 0, payload);
  std::vector<gp_event> out;
  uint64_t first = 0;
  auto refused = [&](std::vector<uint8_t> bad, const std::string& says) {
    out.clear();
    const std::string problem = unpack_events(bad, &first, out);
    EXPECT_NE(problem.find(says), std::string::npos) << problem;
    EXPECT_TRUE(out.empty());
  };
  refused({1, 2, 3}, "shorter than its 12-byte first_event and count");
  std::vector<uint8_t> cut(payload.begin(), payload.end() - 1);
  refused(cut, "ends inside an event");
  std::vector<uint8_t> more = payload;
  more.push_back(0);
  refused(more, "1 bytes after its 302 events");
  std::vector<uint8_t> huge = payload;
  huge[8] = huge[9] = huge[10] = huge[11] = 0xff;
  refused(huge, "does not fit the payload");
  std::vector<uint8_t> reserved = payload;
  reserved[kPackedEventsPrefix] |= 0x80;
  refused(reserved, "reserved bit 7");
  std::vector<uint8_t> same_tid = payload;
  same_tid[kPackedEventsPrefix] |= 0x10;  // the first event says "tid as the one before"
  refused(same_tid, "the first event says its tid");
  const std::vector<uint8_t> overflow = {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x01, 0xff, 0xff, 0xff, 0xff, 0x7f};
  refused(overflow, "a 32-bit field holds");
}

// docs/record-file.md's table of chunk types (`| 27 | \`OP_EVENTS\` | 6 |`)
// lists exactly the chunk table's types, names and versions.
TEST(ChunkSpecs, TheSpecDocumentListsTheTable) {
  std::ifstream doc(source_dir() / "docs" / "record-file.md");
  ASSERT_TRUE(doc) << "docs/record-file.md not found";
  const std::regex row(R"(^\|\s*(\d+)\s*\|\s*`([A-Z_]+)`\s*\|\s*(\d+))");
  std::set<std::tuple<uint32_t, std::string, uint32_t>> listed, table;
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row))
      listed.insert({static_cast<uint32_t>(std::stoul(m[1])), m[2], static_cast<uint32_t>(std::stoul(m[3]))});
  }
  for (const ChunkSpec& spec : chunk_specs()) table.insert({static_cast<uint32_t>(spec.type), spec.name, spec.since});
  EXPECT_EQ(listed, table);
  std::ifstream again(source_dir() / "docs" / "record-file.md");
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("This gpuprof writes\nversion " + std::to_string(GP_RECORD_FORMAT_VERSION)), std::string::npos)
      << "docs/record-file.md names another version than GP_RECORD_FORMAT_VERSION";
}

TEST(ChunkSpecs, VersionsKnowTheirTypes) {
  EXPECT_EQ(find_chunk_spec(7, 1), nullptr);  // OPTIONS: version 2
  EXPECT_NE(find_chunk_spec(7, 2), nullptr);
  EXPECT_EQ(find_chunk_spec(27, 5), nullptr);  // OP_EVENTS: version 6
  ASSERT_NE(find_chunk_spec(27, 6), nullptr);
  EXPECT_EQ(find_chunk_spec(27, 6)->gate, ChunkGate::ops);
  ASSERT_NE(find_chunk_spec(28, 6), nullptr);  // MODULE_NAMES: added to version 6 after its release
  EXPECT_EQ(find_chunk_spec(28, 6)->gate, ChunkGate::with_stack);
  EXPECT_EQ(find_chunk_spec(28, 5), nullptr);
  ASSERT_NE(find_chunk_spec(29, 6), nullptr);  // JOB_RANKS: added to version 6 after its release
  EXPECT_EQ(find_chunk_spec(29, 6)->gate, ChunkGate::none);
  EXPECT_EQ(find_chunk_spec(29, 5), nullptr);
  ASSERT_NE(find_chunk_spec(30, 6), nullptr);  // NATIVE_FILES: added to version 6 after its release
  EXPECT_EQ(find_chunk_spec(30, 6)->gate, ChunkGate::sampled);
  EXPECT_EQ(find_chunk_spec(30, 5), nullptr);
  ASSERT_NE(find_chunk_spec(31, 6), nullptr);  // BACKWARD_STACKS: added to version 6 after its release
  EXPECT_EQ(find_chunk_spec(31, 6)->gate, ChunkGate::with_stack);
  EXPECT_EQ(find_chunk_spec(31, 5), nullptr);
  EXPECT_EQ(find_chunk_spec(32, 6), nullptr);
  EXPECT_STREQ(chunk_type_name(0), "unknown type");
}

}  // namespace
}  // namespace gpuprof
