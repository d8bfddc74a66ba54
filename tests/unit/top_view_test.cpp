// Tests of gpuprof top's pieces: the streaming timeline, the live table's
// intervals, and the screen text (golden files for the batch layout).
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "live/column_fit.h"
#include "live/live_gpu_join.h"
#include "live/live_op_table.h"
#include "analyze/op_timeline.h"
#include "probe_events.h"
#include "recordings.h"
#include "test_files.h"
#include "live/top_view.h"

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
    EXPECT_EQ(builder.open_frames(), whole.counters.calls_open_at_end);
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
    EXPECT_LE(text_width(screen.substr(at, end - at)), 80u) << screen.substr(at, end - at);
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

TEST(LiveGpuJoin, ActivitiesMeetTheCallsOfTheirLaunchesInAnyOrder) {
  LiveGpuJoin join;
  // aten::linear (op 0, 100..200) calls aten::addmm (op 1, 120..150) on
  // thread 5; launches at 130 (in addmm) and 170 (back in linear); one at
  // 300 on thread 6, in no call.
  join.launch({130, 7, 5, 211, 2}, 1000);
  join.launch({170, 8, 5, 211, 2}, 1000);
  join.launch({300, 9, 6, 211, 2}, 1000);
  // Kernel 8 arrives before the calls completed: held.
  EXPECT_EQ(join.activity({9000, 9050, 8, 0, 0, 7, GpuActivityKind::kernel, 0}, 1100), std::nullopt);
  const std::vector<LiveGpuJoin::Credit> credits =
      join.calls({{.tid = 5, .op_id = 1, .start_ns = 120, .end_ns = 150},
                  {.tid = 5, .op_id = 0, .start_ns = 100, .end_ns = 200}});
  EXPECT_EQ(credits, (std::vector<LiveGpuJoin::Credit>{{0, 50}}));  // kernel 8 -> linear
  // Kernel 7 after its call completed: credited at once, to the innermost call.
  EXPECT_EQ(join.activity({9100, 9400, 7, 0, 0, 7, GpuActivityKind::kernel, 0}, 1200), LiveGpuJoin::Credit(1, 300));
  // A graph launch's second kernel: the same id, credited too.
  EXPECT_EQ(join.activity({9400, 9410, 7, 0, 0, 7, GpuActivityKind::kernel, 0}, 1200), LiveGpuJoin::Credit(1, 10));
  // The launch outside calls, and an activity whose launch never came: held,
  // then dropped after kExpiryNs.
  EXPECT_EQ(join.activity({9500, 9600, 42, 0, 0, 7, GpuActivityKind::kernel, 0}, 1300), std::nullopt);
  EXPECT_EQ(join.pending(), 2u);
  join.expire(1300 + LiveGpuJoin::kExpiryNs + 1);
  EXPECT_EQ(join.pending(), 0u);
}

TEST(LiveOpTable, GpuTimeAndBusyFigures) {
  const std::vector<OpInfo> ops = {op("aten::linear"), op("aten::addmm")};
  LiveOpTable table(ops);
  table.begin(0);
  table.add({{.tid = 1, .op_id = 1, .start_ns = 10, .end_ns = 40, .self_ns = 30}});
  table.add_gpu_time(1, 300);
  table.add_gpu_time(0, 50);  // a credit for an op with no call completed in this interval
  // Device 0: two overlapping kernels and a memcpy after them; device 1: one kernel.
  table.add_gpu_activity({100, 300, 1, 0, 0, 7, GpuActivityKind::kernel, 0});
  table.add_gpu_activity({200, 400, 2, 0, 0, 8, GpuActivityKind::kernel, 0});
  table.add_gpu_activity({500, 600, 3, 4096, 0, 7, GpuActivityKind::memcpy, 0});
  table.add_gpu_activity({0, 1000, 4, 0, 1, 7, GpuActivityKind::kernel, 0});
  const LiveInterval interval = table.roll(2000);
  EXPECT_EQ(interval.rows, (std::vector<LiveOpRow>{{"aten::addmm", 1, 30, 30, 300}, {"aten::linear", 0, 0, 0, 50}}));
  EXPECT_EQ(interval.gpu_kernels, 3u);
  EXPECT_EQ(interval.gpu_busy_ns, 300u + 100u + 1000u);  // union per device, summed
  EXPECT_EQ(interval.gpu_devices, 2u);
  const LiveInterval all = table.since_start();
  EXPECT_EQ(all.gpu_kernels, 3u);
  EXPECT_EQ(all.rows[1].self_cuda_ns, 50u);
}

TEST(TopView, GpuFiguresAndTheSelfCudaColumn) {
  LiveInterval shown = sample_interval();
  shown.rows[0].self_cuda_ns = 400'000'000;  // aten::mm
  shown.gpu_kernels = 6069;
  shown.gpu_busy_ns = 450'000'000;
  shown.gpu_devices = 1;
  TopStatus status = sample_status();
  status.gpu = true;
  TopViewOptions options;  // 80 x 24
  options.help_line = true;
  options.sort = TopSort::self_cuda_time_total;
  expect_golden("screen_80x24_gpu", render_top(shown, status, options));
}

// A table line's cells, split where two or more spaces are.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  size_t at = line.find_first_not_of(' ');
  while (at != std::string::npos) {
    size_t end = line.find("  ", at);
    cells.push_back(line.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? end : line.find_first_not_of(' ', end);
  }
  return cells;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// docs/top.md, "Narrow terminals": on any screen from 40 columns, each row
// shows the columns fit_top_columns keeps, every cell exactly as the full
// width shows it (no digit cut), and no line is wider than the screen.
TEST(TopView, NarrowScreensDropWholeColumnsAndKeepTheSortKeys) {
  for (bool gpu : {false, true}) {
    LiveInterval shown = sample_interval();
    shown.rows[0].self_cuda_ns = 400'000'000;
    TopStatus status = sample_status();
    status.gpu = gpu;
    for (TopSort sort : {TopSort::self_cpu_time_total, TopSort::cpu_time_total, TopSort::cpu_time,
                         TopSort::self_cuda_time_total, TopSort::count}) {
      if (sort == TopSort::self_cuda_time_total && !gpu) continue;
      TopViewOptions options;
      options.sort = sort;
      options.height = 0;
      options.width = 200;
      const std::vector<std::string> wide = lines_of(render_top(shown, status, options));
      const std::vector<std::string> all_headers = cells_of(wide[3]);
      for (size_t width : {80, 70, 60, 40}) {
        options.width = width;
        const std::vector<std::string> narrow = lines_of(render_top(shown, status, options));
        ASSERT_EQ(narrow.size(), wide.size());
        for (const std::string& line : narrow) EXPECT_LE(text_width(line), width) << line;
        const TopLayout layout = fit_top_columns(width, sort, gpu);
        std::vector<std::string> headers = {"Name"};
        for (TopColumn c : layout.columns) headers.emplace_back(top_column_header(c));
        ASSERT_EQ(cells_of(narrow[3]), headers) << width;
        for (size_t row = 4; row < wide.size(); ++row) {
          const std::vector<std::string> full = cells_of(wide[row]), cut = cells_of(narrow[row]);
          ASSERT_EQ(cut.size(), headers.size()) << narrow[row];
          for (size_t c = 1; c < headers.size(); ++c) {
            const size_t at = std::find(all_headers.begin(), all_headers.end(), headers[c]) - all_headers.begin();
            EXPECT_EQ(cut[c], full[at]) << width << " " << headers[c] << ": " << narrow[row];
          }
          // The name, elided to its column, or whole.
          EXPECT_TRUE(cut[0] == full[0] || (cut[0].ends_with("…") && full[0].starts_with(cut[0].substr(0, cut[0].size() - 3))))
              << cut[0];
        }
      }
    }
  }
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
  EXPECT_EQ(next_top_sort(TopSort::self_cpu_time_total, false), TopSort::cpu_time_total);
  EXPECT_EQ(next_top_sort(TopSort::cpu_time, false), TopSort::count);  // no GPU: Self CUDA skipped
  EXPECT_EQ(next_top_sort(TopSort::cpu_time, true), TopSort::self_cuda_time_total);
  EXPECT_EQ(next_top_sort(TopSort::count, true), TopSort::self_cpu_time_total);
  EXPECT_EQ(top_sort_of_column(4, false), TopSort::cpu_time_total);
  EXPECT_EQ(top_sort_of_column(6, false), TopSort::count);
  EXPECT_EQ(top_sort_of_column(6, true), TopSort::self_cuda_time_total);
  EXPECT_EQ(top_sort_of_column(7, true), TopSort::count);
  EXPECT_EQ(top_sort_of_column(1, true), std::nullopt);
  EXPECT_EQ(top_sort_of_column(7, false), std::nullopt);
  EXPECT_EQ(parse_top_sort("cpu_time"), TopSort::cpu_time);
  EXPECT_EQ(parse_top_sort("self_cuda_time_total"), TopSort::self_cuda_time_total);
  EXPECT_EQ(parse_top_sort("self_cuda_memory_usage"), std::nullopt);
}


TEST(TopView, ProcessListPutsTracedProcessesFirstAndKeepsTheSelectionInView) {
  std::vector<TopProcessRow> rows = {
      {.pid = 30, .comm = "spin", .cmdline = "spin", .cpu_percent = 99.0},
      {.pid = 10, .comm = "python3", .cmdline = "python3 a.py", .cpu_percent = 50.0, .ops_per_s = 100, .traced = true},
      {.pid = 20, .comm = "python3", .cmdline = "python3 b.py", .cpu_percent = 80.0, .ops_per_s = 9000,
       .launches_per_s = 12, .traced = true, .launches = true},
      {.pid = 40, .comm = "bash", .cmdline = "bash", .cpu_percent = -1}};
  const std::vector<TopProcessRow> sorted = sort_top_processes(rows);
  std::vector<int> order;
  for (const TopProcessRow& r : sorted) order.push_back(r.pid);
  EXPECT_EQ(order, (std::vector<int>{20, 10, 30, 40}));  // traced by ops/s, then by CPU %
  TopViewOptions options;
  options.height = 0;
  options.width = 120;
  const std::string text = render_top_processes(sorted, 1, 2.5, 0, options);
  EXPECT_EQ(text,
            "gpuprof top -a - 4 processes, 2 running PyTorch (traced) - 2.5 s\n"
            "\n"
            "     PID  COMMAND             CPU %       OPS/S  LAUNCHES/S  COMMAND LINE\n"
            "      20  python3              80.0        9000          12  python3 b.py\n"
            "      10  python3              50.0         100           -  python3 a.py\n"
            "      30  spin                 99.0           -           -  spin\n"
            "      40  bash                    -           -           -  bash\n");
  // On the screen: the selection is marked and stays in view on a short screen.
  options.height = 6;
  options.help_line = true;
  const std::string screen = render_top_processes(sorted, 3, 2.5, 7, options);
  EXPECT_NE(screen.find("7 events LOST"), std::string::npos) << screen;
  EXPECT_NE(screen.find(">     40  bash"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("     20  python3"), std::string::npos) << screen;  // scrolled out
  EXPECT_EQ(std::count(screen.begin(), screen.end(), '\n'), 6) << screen;
}

// top -a on narrow screens (docs/top.md, "Narrow terminals"): COMMAND
// narrows, then LAUNCHES/S goes; the PID and the sorted-by figures stay
// whole, and only the command line is cut.
TEST(TopView, ProcessListOnNarrowScreens) {
  const std::vector<TopProcessRow> sorted = sort_top_processes(
      {{.pid = 4194301, .comm = "python3-trainer-long", .cmdline = "python3 train.py --epochs 90", .cpu_percent = 180.5,
        .ops_per_s = 123456, .launches_per_s = 98765, .traced = true, .launches = true}});
  TopViewOptions options;
  options.height = 0;
  options.width = 60;
  EXPECT_EQ(render_top_processes(sorted, 0, 2.5, 0, options),
            "gpuprof top -a - 1 processes, 1 running PyTorch (traced)\n"
            "\n"
            "     PID  COMMAND             CPU %       OPS/S  LAUNCHES/S\n"
            " 4194301  python3-trainer…    180.5      123456       98765\n");
  options.width = 70;  // the command line gets what is left
  EXPECT_EQ(render_top_processes(sorted, 0, 2.5, 0, options),
            "gpuprof top -a - 1 processes, 1 running PyTorch (traced) - 2.5 s\n"
            "\n"
            "     PID  COMMAND             CPU %       OPS/S  LAUNCHES/S  COMMAND L\n"
            " 4194301  python3-trainer…    180.5      123456       98765  python3 t\n");
  options.width = 78;  // cut just after "train.py": the row ends at the last word, not in a blank
  EXPECT_EQ(render_top_processes(sorted, 0, 2.5, 0, options),
            "gpuprof top -a - 1 processes, 1 running PyTorch (traced) - 2.5 s\n"
            "\n"
            "     PID  COMMAND             CPU %       OPS/S  LAUNCHES/S  COMMAND LINE\n"
            " 4194301  python3-trainer…    180.5      123456       98765  python3 train.py\n");
  options.width = 40;
  EXPECT_EQ(render_top_processes(sorted, 0, 2.5, 0, options),
            "gpuprof top -a - 1 processes\n"
            "\n"
            "     PID  COMMAND      CPU %       OPS/S\n"
            " 4194301  python3-…    180.5      123456\n");
}

}  // namespace
}  // namespace gpuprof
