// top_view.h: the text of one `gpuprof top` screen (or batch refresh).
//
// A pure function of the live table and a few status figures, so the
// interactive screen, the --batch output and the golden tests share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "live_op_table.h"
#include "live_sample_table.h"

namespace gpuprof {

// torch's sort keys that fit a live view, in the order `s` cycles them
// (self_cuda_time_total only with GPU times).
enum class TopSort { self_cpu_time_total, cpu_time_total, cpu_time, self_cuda_time_total, count };
std::string_view top_sort_name(TopSort sort);
std::optional<TopSort> parse_top_sort(std::string_view name);
TopSort next_top_sort(TopSort sort, bool gpu);
// The sort key of table column `column` (1-based, as the number keys; with
// GPU times the Self CUDA column comes before # Calls): nullopt for the
// Name column and past the last.
std::optional<TopSort> top_sort_of_column(int column, bool gpu);

struct TopStatus {
  int pid = 0;
  std::string comm;
  uint32_t threads = 0;
  double cpu_percent = -1;  // the target's CPU use over the interval (< 0: unknown)
  double elapsed_s = 0;     // since top started tracing
  uint64_t events_lost = 0;
  std::string state;        // "" while tracing; else what is going on ("waiting for libtorch_cpu")
  bool gpu = false;         // the CUPTI shim sends GPU records: GPU figures and the Self CUDA column
};

struct TopViewOptions {
  TopSort sort = TopSort::self_cpu_time_total;
  std::string filter;        // substring of the op name ("" shows every row)
  bool since_start = false;  // the table is since the start, not the last interval
  bool paused = false;
  size_t width = 80;
  size_t height = 24;        // 0: no limit (batch mode prints every row)
  bool help_line = false;    // the interactive screen's key help at the bottom
  std::string prompt;        // the filter being typed ("/conv"), shown instead of the help
  bool python_lines = false;  // the help line names the view `tab` switches to
};

// Lines end in '\n'; no line is longer than options.width, and with a
// height there are at most that many lines.
std::string render_top(const LiveInterval& shown, const TopStatus& status, const TopViewOptions& options);

// The second view (top -F HZ, `tab`): the hottest Python lines by CPU
// samples, with the same status lines (op_calls: the op calls of the same
// period, for ops/s). `sample_hz` 0: sampling is off, and the view says how
// to turn it on.
std::string render_top_lines(const LiveLines& shown, uint64_t op_calls, const TopStatus& status,
                             const TopViewOptions& options, uint32_t sample_hz);

}  // namespace gpuprof
