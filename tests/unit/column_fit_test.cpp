// Tests of the narrow-terminal rule of top's tables (live/column_fit.h):
// the columns kept at each width for each sort key, numbers never cut,
// names elided, status lines cut between their parts.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "live/column_fit.h"
#include "live/top_view.h"

namespace gpuprof {
namespace {

using C = TopColumn;

std::vector<C> kept(size_t width, TopSort sort, bool gpu) { return fit_top_columns(width, sort, gpu).columns; }

const std::vector<C> kAllCpu = {C::self_cpu_percent, C::self_cpu, C::cpu_total, C::cpu_avg, C::calls};
const std::vector<C> kAllGpu = {C::self_cpu_percent, C::self_cpu, C::cpu_total, C::cpu_avg, C::self_cuda, C::calls};

TEST(TopColumns, WithoutGpuTimes) {
  // Name (12 at least) and 12 per column (10 and the gap): 5 columns need 72.
  for (TopSort sort : {TopSort::self_cpu_time_total, TopSort::cpu_time_total, TopSort::cpu_time, TopSort::count}) {
    EXPECT_EQ(kept(120, sort, false), kAllCpu);
    EXPECT_EQ(kept(80, sort, false), kAllCpu);
  }
  EXPECT_EQ(fit_top_columns(120, TopSort::count, false).name_width, 60u);  // the name's widest
  EXPECT_EQ(fit_top_columns(80, TopSort::count, false).name_width, 20u);
  // 70 and 60: four columns; CPU avg goes first, Self CPU % next when CPU avg is the sort key's.
  for (size_t width : {70, 60}) {
    const std::vector<C> no_avg = {C::self_cpu_percent, C::self_cpu, C::cpu_total, C::calls};
    EXPECT_EQ(kept(width, TopSort::self_cpu_time_total, false), no_avg) << width;
    EXPECT_EQ(kept(width, TopSort::cpu_time_total, false), no_avg) << width;
    EXPECT_EQ(kept(width, TopSort::count, false), no_avg) << width;
    EXPECT_EQ(kept(width, TopSort::cpu_time, false), (std::vector<C>{C::self_cpu, C::cpu_total, C::cpu_avg, C::calls}))
        << width;
  }
  // The name narrows before a column goes: at 70 it has 22, at 60 its narrowest.
  EXPECT_EQ(fit_top_columns(70, TopSort::count, false).name_width, 22u);
  EXPECT_EQ(fit_top_columns(60, TopSort::count, false).name_width, 12u);
  // 40: two columns; Self CPU stays to the last, and the sort key's column.
  EXPECT_EQ(kept(40, TopSort::self_cpu_time_total, false), (std::vector<C>{C::self_cpu, C::calls}));
  EXPECT_EQ(kept(40, TopSort::count, false), (std::vector<C>{C::self_cpu, C::calls}));
  EXPECT_EQ(kept(40, TopSort::cpu_time_total, false), (std::vector<C>{C::self_cpu, C::cpu_total}));
  EXPECT_EQ(kept(40, TopSort::cpu_time, false), (std::vector<C>{C::self_cpu, C::cpu_avg}));
  EXPECT_EQ(fit_top_columns(40, TopSort::cpu_time, false).name_width, 16u);
}

TEST(TopColumns, WithGpuTimes) {
  for (TopSort sort : {TopSort::self_cpu_time_total, TopSort::self_cuda_time_total, TopSort::count})
    EXPECT_EQ(kept(120, sort, true), kAllGpu);
  // 80: six columns need 84; CPU avg goes (Self CPU % when sorted by CPU avg).
  EXPECT_EQ(kept(80, TopSort::self_cuda_time_total, true),
            (std::vector<C>{C::self_cpu_percent, C::self_cpu, C::cpu_total, C::self_cuda, C::calls}));
  EXPECT_EQ(kept(80, TopSort::cpu_time, true),
            (std::vector<C>{C::self_cpu, C::cpu_total, C::cpu_avg, C::self_cuda, C::calls}));
  for (size_t width : {70, 60}) {
    EXPECT_EQ(kept(width, TopSort::self_cuda_time_total, true),
              (std::vector<C>{C::self_cpu, C::cpu_total, C::self_cuda, C::calls}))
        << width;
    EXPECT_EQ(kept(width, TopSort::cpu_time, true), (std::vector<C>{C::self_cpu, C::cpu_avg, C::self_cuda, C::calls}))
        << width;
  }
  EXPECT_EQ(kept(40, TopSort::self_cuda_time_total, true), (std::vector<C>{C::self_cpu, C::self_cuda}));
  EXPECT_EQ(kept(40, TopSort::self_cpu_time_total, true), (std::vector<C>{C::self_cpu, C::self_cuda}));
  EXPECT_EQ(kept(40, TopSort::count, true), (std::vector<C>{C::self_cpu, C::calls}));
}

TEST(TopColumns, AWideNumberWidensItsColumn) {
  // A 13-digit count widens # Calls to 13: at 80 the name gives up 3, at
  // 72 CPU avg goes.
  std::array<size_t, kTopColumnCount> widest{};
  widest[static_cast<size_t>(C::calls)] = 13;
  EXPECT_EQ(fit_top_columns(80, TopSort::count, false, widest).columns, kAllCpu);
  EXPECT_EQ(fit_top_columns(80, TopSort::count, false, widest).name_width, 17u);
  EXPECT_EQ(fit_top_columns(72, TopSort::count, false, widest).columns,
            (std::vector<C>{C::self_cpu_percent, C::self_cpu, C::cpu_total, C::calls}));
}

TEST(ColumnFit, KeptColumnsStayEvenWhenNothingFits) {
  const ColumnFit fit = fit_columns(10, 12, 60, {{10, 0, false}, {10, 1, true}});
  EXPECT_EQ(fit.shown, (std::vector<bool>{false, true}));
  EXPECT_EQ(fit.name_width, 12u);  // the line is wider than 10: nothing is cut
}

TEST(ColumnFit, CellsAndLines) {
  EXPECT_EQ(align_left_elided("aten::resolve_conj", 12), "aten::resol…");
  EXPECT_EQ(text_width(align_left_elided("aten::resolve_conj", 12)), 12u);
  EXPECT_EQ(align_left_elided("aten::mm", 12), "aten::mm    ");
  EXPECT_EQ(align_right("18210", 10), "     18210");
  EXPECT_EQ(align_right("123456789012", 10), "123456789012");  // never cut
  EXPECT_EQ(text_width("ä…x"), 3u);
  EXPECT_EQ(cut_to_width("ä…xyz", 3), "ä…x");
  const std::string status = "gpuprof top - 4242 (python3), 3 threads, CPU 97.2%, 36422 ops/s, 0 events lost";
  EXPECT_EQ(fit_text_line(status, 200), status);
  EXPECT_EQ(fit_text_line(status, 60), "gpuprof top - 4242 (python3), 3 threads, CPU 97.2%");
  EXPECT_EQ(fit_text_line(status, 48), "gpuprof top - 4242 (python3), 3 threads");
  EXPECT_EQ(fit_text_line(status, 20), "gpuprof top");
  EXPECT_EQ(fit_text_line("q quit  s/2-6 sort  / filter", 20), "q quit  s/2-6 sort");
  EXPECT_EQ(fit_text_line("no_separator_here", 5), "no_se");
}

}  // namespace
}  // namespace gpuprof
