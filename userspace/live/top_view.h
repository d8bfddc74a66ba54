// top_view.h: the text of one `gpuprof top` screen (or batch refresh).
//
// A pure function of the live table and a few status figures, so the
// interactive screen, the --batch output and the golden tests share it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/module_tree.h"
#include "live/live_op_table.h"
#include "live/live_sample_table.h"

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

// The op table's columns after Name, torch's, in screen order (Self CUDA
// only with GPU times).
enum class TopColumn { self_cpu_percent, self_cpu, cpu_total, cpu_avg, self_cuda, calls };
constexpr size_t kTopColumnCount = 6;
std::string_view top_column_header(TopColumn column);

struct TopLayout {
  size_t name_width = 0;
  std::vector<TopColumn> columns;  // those shown, in screen order
};
// The columns of a `width`-wide table sorted by `sort` (column_fit.h's
// rule): Name narrows to 12 first, then CPU avg, Self CPU %, CPU total,
// # Calls, Self CUDA and Self CPU go in that order, except the sort key's
// column. `widest`: per TopColumn, its widest cell (a column is at least
// 10 wide).
TopLayout fit_top_columns(size_t width, TopSort sort, bool gpu, const std::array<size_t, kTopColumnCount>& widest = {});

struct TopStatus {
  int pid = 0;
  std::string comm;
  uint32_t threads = 0;
  double cpu_percent = -1;  // the target's CPU use over the interval (< 0: unknown)
  double elapsed_s = 0;     // since top started tracing
  uint64_t events_lost = 0;
  std::string state;        // "" while tracing; else what is going on ("waiting for libtorch_cpu")
  bool gpu = false;         // the CUPTI shim sends GPU records: GPU figures and the Self CUDA column
  std::string times;        // what op times are: compensated for the probes' cost, or raw
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
  bool modules = false;       // the module view (top --with-modules, key m) is shown
  bool modules_key = false;   // the help line names `m` (top --with-modules)
  bool module_events = false;  // the module view lists each module's own ops under it (e, --show-events)
};

// Lines end in '\n'; no line is longer than options.width, unless even the
// narrowest name and the sort key's column do not fit (no number is ever
// cut), and with a height there are at most that many lines.
std::string render_top(const LiveInterval& shown, const TopStatus& status, const TopViewOptions& options);

// The second view (top -F HZ, `tab`): the hottest Python lines by CPU
// samples, with the same status lines (op_calls: the op calls of the same
// period, for ops/s). `sample_hz` 0: sampling is off, and the view says how
// to turn it on.
// top -a: one row per process gpuprof knows of (traced, or sampled with
// -F), as render_top_processes lists them.
struct TopProcessRow {
  int pid = 0;
  std::string comm;
  std::string cmdline;
  double cpu_percent = -1;   // over the last interval (< 0: unknown, e.g. exited)
  double ops_per_s = 0;      // op calls that ended in the interval, per second
  double launches_per_s = 0;  // CUDA kernel launches, per second
  bool traced = false;       // runs a libtorch_cpu with probes
  bool launches = false;     // its libcudart has probes
};
// The process list of top -a: traced processes first, by ops/s, then the
// others by CPU %; `selected` (an index into the sorted order, as
// sort_top_processes gives it) is marked. With a height, at most that many
// lines (the selection kept in view).
std::vector<TopProcessRow> sort_top_processes(std::vector<TopProcessRow> rows);
std::string render_top_processes(const std::vector<TopProcessRow>& sorted, size_t selected, double elapsed_s,
                                 uint64_t events_lost, const TopViewOptions& options);

std::string render_top_lines(const LiveLines& shown, uint64_t op_calls, const TopStatus& status,
                             const TopViewOptions& options, uint32_t sample_hz);

// The module view (top --with-modules, m): report --modules' layer table of
// the same period (`ops`: its op calls, for ops/s and its span).
std::string render_top_modules(const ModuleTree& tree, const LiveInterval& ops, const TopStatus& status,
                               const TopViewOptions& options);

}  // namespace gpuprof
