// Tests of gpuprof top's pieces: the streaming timeline, the live table's
// intervals, and the screen text (golden files for the batch layout).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "live_op_table.h"
#include "op_timeline.h"
#include "probe_events.h"
#include "recordings.h"
#include "test_files.h"
#include "top_view.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// A nested call, an unwound one, two threads interleaved.
std::vector<gp_event> mixed_events() {
  return {op_entry(0, 1000, 0, 1), op_entry(5, 900, 1, 1),  op_entry(6, 2000, 2, 2), op_exit(20, 900, 1, 1),
          op_exit(30, 1000, 0, 1), op_entry(40, 1000, 1, 1), op_exit(41, 2000, 2, 2), catch_at(60, 1100, 1),
          op_entry(70, 1000, 0, 1), op_exit(90, 1000, 0, 1)};
}

TEST(TimelineBuilderStream, TakingCallsAsTheyComeGivesBuildTimelinesCalls) {
  const std::vector<gp_event> events = mixed_events();
  const Timeline whole = build_timeline(events);
  for (size_t every = 1; every <= events.size(); ++every) {
    TimelineBuilder builder;
    std::vector<OpCall> taken;
    for (size_t i = 0; i < events.size(); ++i) {
      builder.add(events[i], i);
      if ((i + 1) % every == 0) {
        std::vector<OpCall> calls = builder.take_calls();
        taken.insert(taken.end(), calls.begin(), calls.end());
      }
    }
    std::vector<OpCall> rest = builder.take_calls();
    taken.insert(taken.end(), rest.begin(), rest.end());
    EXPECT_EQ(taken, whole.calls) << "taking every " << every << " events";
    EXPECT_EQ(builder.open_frames(), whole.calls_open_at_end);
  }
}

TEST(LiveOpTable, IntervalsAndTheTotalSinceTheStart) {
  const std::vector<OpInfo> ops = {op("aten::linear"), op("aten::addmm")};
  LiveOpTable table(ops);
  table.begin(1000);
  table.add({{.tid = 1, .op_id = 1, .start_ns = 1100, .end_ns = 1400, .self_ns = 300},
             {.tid = 1, .op_id = 0, .start_ns = 1050, .end_ns = 1500, .self_ns = 150}});
  const LiveInterval first = table.roll(2000);
  EXPECT_EQ(first.start_ns, 1000u);
  EXPECT_EQ(first.end_ns, 2000u);
  EXPECT_EQ(first.rows, (std::vector<LiveOpRow>{{"aten::addmm", 1, 300, 300}, {"aten::linear", 1, 150, 450}}));
  EXPECT_EQ(first.calls, 2u);
  EXPECT_EQ(first.self_ns, 450u);
  table.add({{.tid = 1, .op_id = 1, .start_ns = 2100, .end_ns = 2200, .self_ns = 100},
             {.tid = 1, .op_id = 7, .start_ns = 2300, .end_ns = 2310, .self_ns = 10}});
  const LiveInterval second = table.roll(3000);
  EXPECT_EQ(second.start_ns, 2000u);
  EXPECT_EQ(second.rows, (std::vector<LiveOpRow>{{"<unknown op 7>", 1, 10, 10}, {"aten::addmm", 1, 100, 100}}));
  const LiveInterval all = table.since_start();
  EXPECT_EQ(all.start_ns, 1000u);
  EXPECT_EQ(all.end_ns, 3000u);
  EXPECT_EQ(all.rows, (std::vector<LiveOpRow>{{"<unknown op 7>", 1, 10, 10},
                                              {"aten::addmm", 2, 400, 400},
                                              {"aten::linear", 1, 150, 450}}));
  EXPECT_TRUE(table.roll(4000).rows.empty());  // nothing completed in that interval
}

LiveInterval sample_interval() {
  LiveInterval shown;
  shown.start_ns = 5'000'000'000;
  shown.end_ns = 6'000'000'000;  // 1 s
  shown.rows = {{"aten::mm", 6069, 716'179'000, 729'257'000},
                {"aten::add", 6070, 20'477'000, 59'371'000},
                {"aten::resolve_conj", 18210, 13'080'000, 13'080'000},
                {"aten::_scaled_dot_product_efficient_attention_backward_with_a_long_name", 3, 2'000, 9'000},
                {"aten::relu", 6070, 10'452'000, 22'283'000}};
  for (const LiveOpRow& r : shown.rows) {
    shown.calls += r.calls;
    shown.self_ns += r.self_ns;
  }
  return shown;
}

TopStatus sample_status() {
  TopStatus status;
  status.pid = 4242;
  status.comm = "python3";
  status.threads = 3;
  status.cpu_percent = 97.25;
  status.elapsed_s = 12.34;
  status.events_lost = 0;
  return status;
}

void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = (test::golden_dir() / ("top_" + name + ".txt")).string();
  if (std::getenv("GPUPROF_WRITE_GOLDEN")) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  std::string golden;
  ASSERT_TRUE(test::read_file(path, &golden)) << path;
  EXPECT_EQ(text, golden) << name;
}

TEST(TopView, BatchLayoutSortedBySelfTime) {
  TopViewOptions options;
  options.height = 0;
  options.width = 200;
  expect_golden("batch_self", render_top(sample_interval(), sample_status(), options));
}

TEST(TopView, EightyByTwentyFourScreenWithHelpAndFilterPrompt) {
  TopViewOptions options;  // 80 x 24
  options.help_line = true;
  options.sort = TopSort::count;
  const std::string screen = render_top(sample_interval(), sample_status(), options);
  expect_golden("screen_80x24_count", screen);
  size_t lines = 0;
  for (size_t at = 0; at < screen.size(); at = screen.find('\n', at) + 1) {
    const size_t end = std::min(screen.find('\n', at), screen.size());
    EXPECT_LE(end - at, 80u) << screen.substr(at, end - at);
    ++lines;
    if (screen.find('\n', at) == std::string::npos) break;
  }
  EXPECT_EQ(lines, 24u);
  options.prompt = "/res";
  options.filter = "relu";
  options.paused = true;
  expect_golden("screen_80x24_filter", render_top(sample_interval(), sample_status(), options));
}

TEST(TopView, ASmallScreenShowsWhatFits) {
  TopViewOptions options;
  options.width = 60;
  options.height = 7;  // 4 lines above the rows, the help line: 2 rows
  options.help_line = true;
  const std::string screen = render_top(sample_interval(), sample_status(), options);
  expect_golden("screen_60x7", screen);
}

LiveLines sample_lines() {
  LiveSampleTable table;
  table.frame(0, "train.py(12): <module>");
  table.frame(1, "model.py(40): forward");
  table.frame(2, "libtorch_cpu.so!at::native::addmm_impl_cpu_");
  table.frame(3, "model.py(41): forward");
  table.begin(5'000'000'000);
  for (int i = 0; i < 60; ++i) table.add(CpuSample{.frame_id = 2}, {0, 1});
  for (int i = 0; i < 25; ++i) table.add(CpuSample{.frame_id = 2}, {0, 3});
  for (int i = 0; i < 15; ++i) table.add(CpuSample{.frame_id = 2}, {});  // no Python frames
  return table.roll(6'000'000'000);
}

TEST(TopView, PythonLinesViewAndItsTable) {
  const LiveLines lines = sample_lines();
  EXPECT_EQ(lines.samples, 100u);
  EXPECT_EQ(lines.rows, (std::vector<LiveLineRow>{{"model.py(40): forward", 60},
                                                  {"model.py(41): forward", 25},
                                                  {"[libtorch_cpu.so!at::native::addmm_impl_cpu_]", 15}}));
  TopViewOptions options;
  options.help_line = true;
  options.python_lines = true;
  expect_golden("lines_80x24", render_top_lines(lines, 36422, sample_status(), options, 99));
  options.help_line = false;
  options.height = 0;
  const std::string off = render_top_lines(LiveLines{}, 0, sample_status(), options, 0);
  EXPECT_NE(off.find("(sampling is off: start top with -F 99"), std::string::npos) << off;
}

TEST(TopView, NothingYetAndNothingMatching) {
  TopViewOptions options;
  options.height = 0;
  LiveInterval empty;
  EXPECT_NE(render_top(empty, sample_status(), options).find("(no op call completed)"), std::string::npos);
  options.filter = "conv";
  EXPECT_NE(render_top(sample_interval(), sample_status(), options).find("(no op matches the filter)"),
            std::string::npos);
}

TEST(TopView, SortKeysCycleAndColumnsPickThem) {
  EXPECT_EQ(next_top_sort(TopSort::self_cpu_time_total), TopSort::cpu_time_total);
  EXPECT_EQ(next_top_sort(TopSort::count), TopSort::self_cpu_time_total);
  EXPECT_EQ(top_sort_of_column(4), TopSort::cpu_time_total);
  EXPECT_EQ(top_sort_of_column(6), TopSort::count);
  EXPECT_EQ(top_sort_of_column(1), std::nullopt);
  EXPECT_EQ(top_sort_of_column(7), std::nullopt);
  EXPECT_EQ(parse_top_sort("cpu_time"), TopSort::cpu_time);
  EXPECT_EQ(parse_top_sort("self_cuda_time_total"), std::nullopt);
}

}  // namespace
}  // namespace gpuprof
