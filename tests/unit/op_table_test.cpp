// op_table_test.cpp: the op table against torch's own output.
//
// Each tests/golden/table_<case>.in holds rows (times, memory, input shapes,
// stacks) and table options; table_<case>.txt holds what torch 1.13's table()
// returned for them (tests/golden/make_table_goldens.py). The formatter must
// match byte for byte.
#include "output/op_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "result_values.h"
#include "test_files.h"

namespace gpuprof {
namespace {

namespace fs = std::filesystem;

using test::golden_dir;
using test::read_file;

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(golden_dir(), error)) {
    std::string file = entry.path().filename().string();
    if (file.starts_with("table_") && file.ends_with(".in")) {
      names.push_back(file.substr(6, file.size() - 6 - 3));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct GoldenCase {
  Profile profile;
  TableOptions options;
};

// Parses the .in format: '#' comments, "sort_by\tKEY", "row_limit\tN",
// "profile_memory\t0|1", "group_by_input_shape\t0|1", optionally
// "group_by_stack_n\tN" and "gpu_times\t1", and rows
// "calls\tcpu_total_ns\tself_cpu_ns\tcpu_mem\tself_cpu_mem\tcuda_mem\t
// self_cuda_mem\t[on_gpu\tself_cuda_ns\tcuda_total_ns\t]has_inputs\t
// input_shapes\tname[\tframe...]" (the bracketed GPU fields with gpu_times
// only; input_shapes empty when not grouped; the stack's frames, innermost
// first, follow the name when grouped by stack). Returns an error or "".
std::string parse_case(const std::string& text, GoldenCase* golden) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    if (fields.size() == 2 && fields[0] == "sort_by") {
      auto key = parse_sort_key(fields[1]);
      if (!key) return key.error();
      golden->options.sort_by = *key;
    } else if (fields.size() == 2 && fields[0] == "row_limit") {
      golden->options.row_limit = std::stoi(fields[1]);
    } else if (fields.size() == 2 && fields[0] == "profile_memory") {
      golden->profile.memory_recorded = fields[1] == "1";
    } else if (fields.size() == 2 && fields[0] == "group_by_input_shape") {
      golden->profile.grouped_by_input_shape = fields[1] == "1";
    } else if (fields.size() == 2 && fields[0] == "group_by_stack_n") {
      golden->profile.group_by_stack_n = std::stoi(fields[1]);
    } else if (fields.size() == 2 && fields[0] == "gpu_times") {
      golden->profile.gpu_recorded = fields[1] == "1";
    } else if (fields.size() >= (golden->profile.gpu_recorded ? 13u : 10u)) {
      OpRow row;
      row.calls = std::stoull(fields[0]);
      row.cpu_total_ns = std::stoull(fields[1]);
      row.self_cpu_ns = std::stoull(fields[2]);
      row.cpu_mem = std::stoll(fields[3]);
      row.self_cpu_mem = std::stoll(fields[4]);
      row.cuda_mem = std::stoll(fields[5]);
      row.self_cuda_mem = std::stoll(fields[6]);
      size_t next = 7;
      if (golden->profile.gpu_recorded) {
        row.on_gpu = fields[7] == "1";
        row.self_cuda_ns = std::stoull(fields[8]);
        row.cuda_total_ns = std::stoull(fields[9]);
        next = 10;
      }
      row.has_inputs = fields[next] == "1";
      row.input_shapes = fields[next + 1];
      row.name = fields[next + 2];
      row.stack.assign(fields.begin() + static_cast<std::ptrdiff_t>(next + 3), fields.end());
      golden->profile.self_cpu_total_ns += row.self_cpu_ns;
      golden->profile.rows.push_back(row);
    } else {
      return "bad line: " + line;
    }
  }
  return "";
}

class OpTableGolden : public testing::TestWithParam<std::string> {};

TEST_P(OpTableGolden, MatchesTorch) {
  const fs::path base = golden_dir() / ("table_" + GetParam());
  std::string input, expected;
  ASSERT_TRUE(read_file(base.string() + ".in", &input)) << base << ".in";
  ASSERT_TRUE(read_file(base.string() + ".txt", &expected)) << base << ".txt";
  GoldenCase golden;
  ASSERT_EQ(parse_case(input, &golden), "");

  EXPECT_EQ(format_op_table(golden.profile, golden.options), expected);

  // Row order in the profile must not matter.
  std::reverse(golden.profile.rows.begin(), golden.profile.rows.end());
  EXPECT_EQ(format_op_table(golden.profile, golden.options), expected);
}

INSTANTIATE_TEST_SUITE_P(Goldens, OpTableGolden, testing::ValuesIn(golden_case_names()),
                         [](const testing::TestParamInfo<std::string>& case_info) {
                           return case_info.param;
                         });

TEST(OpTableTest, GoldenFilesAreThere) {
  // A missing tests/golden would otherwise instantiate no cases at all.
  EXPECT_GE(golden_case_names().size(), 50u) << "looked in " << golden_dir();
}

TEST(OpTableTest, EmptyProfileIsEmptyString) {
  EXPECT_EQ(format_op_table(Profile{}, TableOptions{}), "");
}

TEST(OpTableTest, DefaultOptionsAreTorchs) {
  TableOptions options;
  EXPECT_EQ(options.sort_by, SortKey::cpu_time_total);
  EXPECT_EQ(options.row_limit, 100);
}

TEST(OpTableTest, FormatMemoryIsTorchs) {
  EXPECT_EQ(format_memory(0), "0 b");
  EXPECT_EQ(format_memory(572), "572 b");
  EXPECT_EQ(format_memory(-1023), "-1023 b");
  EXPECT_EQ(format_memory(1024), "1.00 Kb");
  EXPECT_EQ(format_memory(-1024), "-1.00 Kb");
  EXPECT_EQ(format_memory(1535), "1.50 Kb");
  EXPECT_EQ(format_memory(1152), "1.12 Kb");  // 1.125: ties to even
  EXPECT_EQ(format_memory(-3156), "-3.08 Kb");
  EXPECT_EQ(format_memory(20000), "19.53 Kb");
  EXPECT_EQ(format_memory(1048575), "1024.00 Kb");  // the unit follows the bytes
  EXPECT_EQ(format_memory(1048576), "1.00 Mb");
  EXPECT_EQ(format_memory(99393536), "94.79 Mb");
  EXPECT_EQ(format_memory(1073741824), "1.00 Gb");
  EXPECT_EQ(format_memory(INT64_MIN), "-8589934592.00 Gb");
}

TEST(OpTableTest, CudaMemoryColumnsNeedMemoryRecorded) {
  // torch looks at self CUDA memory only under profile_memory.
  Profile profile;
  OpRow row;
  row.name = "aten::empty";
  row.calls = 1;
  row.cuda_mem = row.self_cuda_mem = 4096;
  profile.rows.push_back(row);
  std::string table = format_op_table(profile, TableOptions{});
  EXPECT_THAT(table, testing::Not(testing::HasSubstr("Mem")));
  profile.memory_recorded = true;
  table = format_op_table(profile, TableOptions{});
  EXPECT_THAT(table, testing::HasSubstr("CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem"));
}

TEST(OpTableTest, FormatTimeSwitchesUnits) {
  EXPECT_EQ(format_time_us(0.0), "0.000us");
  EXPECT_EQ(format_time_us(999.999), "999.999us");
  EXPECT_EQ(format_time_us(1000.0), "1.000ms");
  EXPECT_EQ(format_time_us(999999.999), "1000.000ms");  // torch's, too
  EXPECT_EQ(format_time_us(1e6), "1.000s");
  EXPECT_EQ(format_time_us(0.0625), "0.062us");  // ties to even
}

TEST(SortKeyTest, ParsesTorchKeys) {
  for (std::string_view name : valid_sort_key_names()) {
    auto key = parse_sort_key(name);
    ASSERT_TRUE(key.has_value()) << name;
    EXPECT_EQ(sort_key_name(*key), name);
  }
  EXPECT_EQ(test::value_of(parse_sort_key("cpu_time")), SortKey::cpu_time);
  EXPECT_EQ(test::value_of(parse_sort_key("count")), SortKey::count);
}

TEST(SortKeyTest, DefaultIsListedFirst) {
  ASSERT_FALSE(valid_sort_key_names().empty());
  EXPECT_EQ(valid_sort_key_names().front(), "cpu_time_total");
}

TEST(SortKeyTest, ParsesCudaTimeKeys) {
  EXPECT_EQ(test::value_of(parse_sort_key("cuda_time_total")), SortKey::cuda_time_total);
  EXPECT_EQ(test::value_of(parse_sort_key("self_cuda_time_total")), SortKey::self_cuda_time_total);
  EXPECT_EQ(test::value_of(parse_sort_key("cuda_time")), SortKey::cuda_time);
}

TEST(SortKeyTest, CudaTimeKeysNeedGpuTimes) {
  Profile profile;
  for (SortKey key : {SortKey::cuda_time_total, SortKey::self_cuda_time_total, SortKey::cuda_time}) {
    EXPECT_EQ(sort_key_unavailable(key, profile),
              "sort key " + std::string(sort_key_name(key)) +
                  " needs GPU times: a recording of a target that had gpuprof's CUPTI shim loaded "
                  "(record -- CMD loads it; see docs/cuda.md)");
  }
  profile.gpu_recorded = true;
  for (SortKey key : {SortKey::cuda_time_total, SortKey::self_cuda_time_total, SortKey::cuda_time})
    EXPECT_EQ(sort_key_unavailable(key, profile), "");
}

TEST(SortKeyTest, ParsesMemoryKeys) {
  EXPECT_EQ(test::value_of(parse_sort_key("cpu_memory_usage")), SortKey::cpu_memory_usage);
  EXPECT_EQ(test::value_of(parse_sort_key("self_cpu_memory_usage")), SortKey::self_cpu_memory_usage);
  EXPECT_EQ(test::value_of(parse_sort_key("cuda_memory_usage")), SortKey::cuda_memory_usage);
  EXPECT_EQ(test::value_of(parse_sort_key("self_cuda_memory_usage")), SortKey::self_cuda_memory_usage);
}

TEST(SortKeyTest, MemoryKeysNeedAMemoryRecording) {
  Profile profile;
  EXPECT_EQ(sort_key_unavailable(SortKey::cpu_memory_usage, profile),
            "sort key cpu_memory_usage needs a recording made with --profile-memory");
  EXPECT_EQ(sort_key_unavailable(SortKey::self_cuda_memory_usage, profile),
            "sort key self_cuda_memory_usage needs a recording made with --profile-memory");
  for (SortKey key : {SortKey::cpu_time_total, SortKey::self_cpu_time_total, SortKey::cpu_time,
                      SortKey::count}) {
    EXPECT_EQ(sort_key_unavailable(key, profile), "") << sort_key_name(key);
  }
  profile.memory_recorded = true;
  profile.gpu_recorded = true;
  for (std::string_view name : valid_sort_key_names()) {
    const auto key = parse_sort_key(name);
    ASSERT_TRUE(key) << name;
    EXPECT_EQ(sort_key_unavailable(*key, profile), "") << name;
  }
}

TEST(SortKeyTest, UnknownKeyListsValidOnes) {
  const auto key = parse_sort_key("CPU_TIME_TOTAL");
  ASSERT_FALSE(key.has_value());
  EXPECT_EQ(key.error(),
            "unknown sort key 'CPU_TIME_TOTAL'; valid keys: cpu_time_total, "
            "self_cpu_time_total, cpu_time, count, cuda_time_total, self_cuda_time_total, cuda_time, "
            "cpu_memory_usage, self_cpu_memory_usage, cuda_memory_usage, self_cuda_memory_usage");
  const auto empty = parse_sort_key("");
  ASSERT_FALSE(empty.has_value());
  EXPECT_TRUE(empty.error().starts_with("unknown sort key ''; valid keys: cpu_time_total, ")) << empty.error();
}

TEST(ProfileNotesTest, NothingToSay) {
  Profile profile;
  profile.threads = 4;  // not a counter
  EXPECT_EQ(format_profile_notes(profile), "");
}

TEST(ProfileNotesTest, EveryCounterInOrder) {
  Profile profile;
  profile.counters.calls_unwound = 12;
  profile.counters.exits_without_entry = 3;
  profile.counters.calls_open_at_end = 2;
  profile.events_lost = 1532;
  EXPECT_EQ(format_profile_notes(profile),
            "gpuprof: 12 calls ended by exception unwinding (counted; their end time is the "
            "catch)\n"
            "gpuprof: 3 ops were already running when recording began (their exits were "
            "ignored)\n"
            "gpuprof: 2 calls still running when recording stopped (not counted)\n"
            "gpuprof: 1532 events lost (ring buffer full); counts are low; try a larger "
            "--ring-buffer\n");
}

TEST(ProfileNotesTest, SingularAndOnlyNonZero) {
  Profile profile;
  profile.counters.exits_without_entry = 1;
  profile.events_lost = 1;
  EXPECT_EQ(format_profile_notes(profile),
            "gpuprof: 1 op was already running when recording began (their exits were "
            "ignored)\n"
            "gpuprof: 1 event lost (ring buffer full); counts are low; try a larger "
            "--ring-buffer\n");
  profile = Profile{};
  profile.counters.calls_unwound = 1;
  profile.counters.calls_open_at_end = 1;
  EXPECT_EQ(format_profile_notes(profile),
            "gpuprof: 1 call ended by exception unwinding (counted; their end time is the "
            "catch)\n"
            "gpuprof: 1 call still running when recording stopped (not counted)\n");
}

}  // namespace
}  // namespace gpuprof
