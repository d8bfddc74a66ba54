// top_view.cpp: one top screen as text (see the header).
#include "live/top_view.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "live/column_fit.h"
#include "output/module_table.h"
#include "output/op_table.h"

namespace gpuprof {
namespace {

struct SortEntry {
  std::string_view name;
  TopSort sort;
};
constexpr std::array<SortEntry, 5> kSorts = {{{"self_cpu_time_total", TopSort::self_cpu_time_total},
                                              {"cpu_time_total", TopSort::cpu_time_total},
                                              {"cpu_time", TopSort::cpu_time},
                                              {"self_cuda_time_total", TopSort::self_cuda_time_total},
                                              {"count", TopSort::count}}};

// Columns after Name: at least torch's 12 less 2, so that 80 columns
// leave the name some room.
constexpr size_t kColumnWidth = 10;
constexpr size_t kMinNameWidth = 12;
constexpr size_t kMaxNameWidth = 60;
// The order in which columns go on a narrow screen (per TopColumn): the
// derived ones first (CPU avg is CPU total / # Calls, Self CPU % a share of
// Self CPU), Self CPU, torch's default sort key, last.
constexpr std::array<int, kTopColumnCount> kDropRank = {1, 5, 2, 0, 4, 3};
// Status lines, the blank line and the header above the rows.
constexpr size_t kLinesAboveRows = 4;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string cut(std::string_view line, size_t width) { return fit_text_line(line, width); }

double sort_value(const LiveOpRow& row, TopSort sort) {
  switch (sort) {
    case TopSort::self_cpu_time_total: return static_cast<double>(row.self_ns);
    case TopSort::cpu_time_total: return static_cast<double>(row.total_ns);
    case TopSort::cpu_time: return row.calls ? static_cast<double>(row.total_ns) / row.calls : 0;
    case TopSort::self_cuda_time_total: return static_cast<double>(row.self_cuda_ns);
    case TopSort::count: return static_cast<double>(row.calls);
  }
  return 0;
}

// The column a sort key orders (Self CPU % orders as Self CPU does: the
// column kept for self_cpu_time_total is Self CPU).
TopColumn sort_column(TopSort sort) {
  switch (sort) {
    case TopSort::self_cpu_time_total: return TopColumn::self_cpu;
    case TopSort::cpu_time_total: return TopColumn::cpu_total;
    case TopSort::cpu_time: return TopColumn::cpu_avg;
    case TopSort::self_cuda_time_total: return TopColumn::self_cuda;
    case TopSort::count: return TopColumn::calls;
  }
  return TopColumn::self_cpu;
}

// The two status lines and the blank line under them.
struct GpuFigures {
  uint64_t kernels = 0;
  uint64_t busy_ns = 0;
  uint32_t devices = 0;
};

void append_status(std::string& out, uint64_t start_ns, uint64_t end_ns, uint64_t calls, const TopStatus& status,
                   const TopViewOptions& options, std::string_view sorted_by,
                   const std::optional<GpuFigures>& gpu = std::nullopt) {
  auto line = [&](std::string text) { out += cut(std::move(text), options.width) + '\n'; };
  const double seconds = end_ns > start_ns ? (end_ns - start_ns) / 1e9 : 0;
  std::string first = "gpuprof top - " + std::to_string(status.pid) + " (" + status.comm + "), " +
                      std::to_string(status.threads) + (status.threads == 1 ? " thread" : " threads");
  if (status.cpu_percent >= 0) first += ", CPU " + fixed(status.cpu_percent, 1) + "%";
  first += ", " + (seconds > 0 ? fixed(calls / seconds, 0) : std::string("0")) + " ops/s, " +
           std::to_string(status.events_lost) + " events lost";
  line(first);
  std::string second = (options.since_start ? "since start (" + fixed(seconds, 1) + " s)"
                                            : "last " + fixed(seconds, 1) + " s") +
                       " of " + fixed(status.elapsed_s, 1) + " s, " + std::string(sorted_by);
  if (!options.filter.empty()) second += ", filter '" + options.filter + "'";
  if (options.paused) second += ", PAUSED";
  // What is going on ("stopped (target exited)") matters more than what
  // the times are: on a narrow screen the times go first.
  const std::string state = status.state.empty() ? "" : " - " + status.state;
  const std::string times = status.times.empty() ? "" : ", " + status.times;
  line(text_width(second + times + state) <= options.width ? second + times + state : second + state);
  // The third line: the GPU's figures when the CUPTI shim sends them, else blank.
  if (status.gpu && gpu) {
    const double busy = seconds > 0 && gpu->devices ? 100.0 * gpu->busy_ns / 1e9 / seconds / gpu->devices : 0;
    line("GPU busy " + fixed(busy, 1) + "% (" + std::to_string(gpu->devices) +
         (gpu->devices == 1 ? " device), " : " devices), ") +
         (seconds > 0 ? fixed(gpu->kernels / seconds, 0) : std::string("0")) + " kernels/s");
  } else {
    line("");
  }
}

// Rows that fit between the lines above them and the help line.
size_t row_room(const TopViewOptions& options, size_t rows) {
  if (options.height == 0) return rows;
  const size_t below = options.help_line ? 1 : 0;
  return options.height > kLinesAboveRows + below ? options.height - kLinesAboveRows - below : 0;
}

// The screen's last line, the help (or the filter being typed), padded
// down to the bottom.
void append_help(std::string& out, const TopViewOptions& options) {
  if (!options.help_line) return;
  size_t used = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  while (options.height > 0 && used + 1 < options.height) {
    out += '\n';
    ++used;
  }
  if (!options.prompt.empty())
    out += cut("filter: " + options.prompt + "_  (Enter: apply, Esc: cancel)", options.width);
  else
    out += cut(std::string("q quit  s/2-6 sort  / filter  t since start/interval  p pause  tab ") +
                   (options.python_lines ? "ops" : "Python lines") +
                   (options.modules_key ? (options.modules ? "  m ops  e module's ops" : "  m modules") : ""),
               options.width);
}

}  // namespace

std::string_view top_sort_name(TopSort sort) {
  for (const SortEntry& e : kSorts)
    if (e.sort == sort) return e.name;
  return "?";
}

std::optional<TopSort> parse_top_sort(std::string_view name) {
  for (const SortEntry& e : kSorts)
    if (e.name == name) return e.sort;
  return std::nullopt;
}

TopSort next_top_sort(TopSort sort, bool gpu) {
  for (size_t i = 0; i < kSorts.size(); ++i) {
    if (kSorts[i].sort != sort) continue;
    TopSort next = kSorts[(i + 1) % kSorts.size()].sort;
    if (next == TopSort::self_cuda_time_total && !gpu) next = kSorts[(i + 2) % kSorts.size()].sort;
    return next;
  }
  return TopSort::self_cpu_time_total;
}

std::optional<TopSort> top_sort_of_column(int column, bool gpu) {
  switch (column) {
    case 2:
    case 3: return TopSort::self_cpu_time_total;
    case 4: return TopSort::cpu_time_total;
    case 5: return TopSort::cpu_time;
    case 6: return gpu ? TopSort::self_cuda_time_total : TopSort::count;
    case 7: return gpu ? std::optional<TopSort>(TopSort::count) : std::nullopt;
    default: return std::nullopt;
  }
}

std::string_view top_column_header(TopColumn column) {
  switch (column) {
    case TopColumn::self_cpu_percent: return "Self CPU %";
    case TopColumn::self_cpu: return "Self CPU";
    case TopColumn::cpu_total: return "CPU total";
    case TopColumn::cpu_avg: return "CPU avg";
    case TopColumn::self_cuda: return "Self CUDA";
    case TopColumn::calls: return "# Calls";
  }
  return "?";
}

TopLayout fit_top_columns(size_t width, TopSort sort, bool gpu, const std::array<size_t, kTopColumnCount>& widest) {
  std::vector<TopColumn> all;
  for (size_t c = 0; c < kTopColumnCount; ++c)
    if (gpu || static_cast<TopColumn>(c) != TopColumn::self_cuda) all.push_back(static_cast<TopColumn>(c));
  std::vector<FitColumn> fit_input;
  for (TopColumn c : all) {
    const size_t i = static_cast<size_t>(c);
    fit_input.push_back({std::max({kColumnWidth, widest[i], top_column_header(c).size()}), kDropRank[i],
                         c == sort_column(sort)});
  }
  const ColumnFit fit = fit_columns(width, kMinNameWidth, kMaxNameWidth, fit_input);
  TopLayout layout;
  layout.name_width = fit.name_width;
  for (size_t i = 0; i < all.size(); ++i)
    if (fit.shown[i]) layout.columns.push_back(all[i]);
  return layout;
}

std::string render_top(const LiveInterval& shown, const TopStatus& status, const TopViewOptions& options) {
  std::string out;
  auto line = [&](std::string text) { out += cut(std::move(text), options.width) + '\n'; };
  append_status(out, shown.start_ns, shown.end_ns, shown.calls, status, options,
                "sorted by " + std::string(top_sort_name(options.sort)),
                GpuFigures{shown.gpu_kernels, shown.gpu_busy_ns, shown.gpu_devices});

  std::vector<const LiveOpRow*> rows;
  for (const LiveOpRow& row : shown.rows)
    if (options.filter.empty() || row.name.find(options.filter) != std::string::npos) rows.push_back(&row);
  // Largest first; names break ties so that the order is stable.
  std::sort(rows.begin(), rows.end(), [&](const LiveOpRow* a, const LiveOpRow* b) {
    const double va = sort_value(*a, options.sort), vb = sort_value(*b, options.sort);
    return va != vb ? va > vb : a->name < b->name;
  });
  rows.resize(std::min(rows.size(), row_room(options, rows.size())));
  // Every cell of the rows shown, so that the columns are laid out on them.
  const double self_total_us = shown.self_ns / 1000.0;
  std::vector<std::array<std::string, kTopColumnCount>> cells;
  std::array<size_t, kTopColumnCount> widest{};
  for (const LiveOpRow* r : rows) {
    const double self_us = r->self_ns / 1000.0, total_us = r->total_ns / 1000.0;
    std::array<std::string, kTopColumnCount>& row = cells.emplace_back();
    row[static_cast<size_t>(TopColumn::self_cpu_percent)] =
        self_total_us > 0 ? fixed(self_us * 100.0 / self_total_us, 2) + "%" : "-";
    row[static_cast<size_t>(TopColumn::self_cpu)] = format_time_us(self_us);
    row[static_cast<size_t>(TopColumn::cpu_total)] = format_time_us(total_us);
    row[static_cast<size_t>(TopColumn::cpu_avg)] = format_time_us(r->calls ? total_us / r->calls : 0);
    row[static_cast<size_t>(TopColumn::self_cuda)] = format_time_us(r->self_cuda_ns / 1000.0);
    row[static_cast<size_t>(TopColumn::calls)] = std::to_string(r->calls);
    for (size_t c = 0; c < kTopColumnCount; ++c) widest[c] = std::max(widest[c], text_width(row[c]));
  }
  const TopLayout layout = fit_top_columns(options.width, options.sort, status.gpu, widest);
  auto width_of = [&](TopColumn c) {
    return std::max({kColumnWidth, widest[static_cast<size_t>(c)], top_column_header(c).size()});
  };
  std::string header = align_left_elided("Name", layout.name_width);
  for (TopColumn c : layout.columns) header += std::string(kColumnGap, ' ') + align_right(top_column_header(c), width_of(c));
  line(header);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string text = align_left_elided(rows[i]->name, layout.name_width);
    for (TopColumn c : layout.columns)
      text += std::string(kColumnGap, ' ') + align_right(cells[i][static_cast<size_t>(c)], width_of(c));
    line(text);
  }
  if (rows.empty()) line(shown.rows.empty() ? "(no op call completed)" : "(no op matches the filter)");
  append_help(out, options);
  return out;
}

std::string render_top_lines(const LiveLines& shown, uint64_t op_calls, const TopStatus& status,
                             const TopViewOptions& options, uint32_t sample_hz) {
  std::string out;
  auto line = [&](std::string text) { out += cut(std::move(text), options.width) + '\n'; };
  append_status(out, shown.start_ns, shown.end_ns, op_calls, status, options,
                "Python lines by CPU samples" +
                    (sample_hz ? " at " + std::to_string(sample_hz) + " Hz" : std::string()));
  // The Python line, last, is the one cell a narrow screen cuts.
  auto row_line = [&](std::string text) { out += cut_to_width(text, options.width) + '\n'; };
  row_line(align_right("Samples", kColumnWidth) + "  " + align_right("%", 8) + "  Python line (innermost frame)");
  std::vector<const LiveLineRow*> rows;
  for (const LiveLineRow& row : shown.rows)
    if (options.filter.empty() || row.line.find(options.filter) != std::string::npos) rows.push_back(&row);
  const size_t room = row_room(options, rows.size());
  for (size_t i = 0; i < rows.size() && i < room; ++i) {
    const LiveLineRow& r = *rows[i];
    row_line(align_right(std::to_string(r.samples), kColumnWidth) + "  " +
             align_right(fixed(shown.samples ? 100.0 * r.samples / shown.samples : 0, 2) + "%", 8) + "  " + r.line);
  }
  if (sample_hz == 0)
    line("(sampling is off: start top with -F 99 to see where the CPU time goes by Python line)");
  else if (rows.empty())
    line(shown.rows.empty() ? "(no sample yet)" : "(no line matches the filter)");
  append_help(out, options);
  return out;
}

std::vector<TopProcessRow> sort_top_processes(std::vector<TopProcessRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const TopProcessRow& a, const TopProcessRow& b) {
    if (a.traced != b.traced) return a.traced;
    if (a.traced && a.ops_per_s != b.ops_per_s) return a.ops_per_s > b.ops_per_s;
    if (a.cpu_percent != b.cpu_percent) return a.cpu_percent > b.cpu_percent;
    return a.pid < b.pid;
  });
  return rows;
}

std::string render_top_processes(const std::vector<TopProcessRow>& sorted, size_t selected, double elapsed_s,
                                 uint64_t events_lost, const TopViewOptions& options) {
  std::string out;
  auto line = [&](std::string text) { out += cut(std::move(text), options.width) + '\n'; };
  size_t traced = 0;
  for (const TopProcessRow& r : sorted) traced += r.traced;
  line("gpuprof top -a - " + std::to_string(sorted.size()) + " processes, " + std::to_string(traced) +
       " running PyTorch (traced) - " + fixed(elapsed_s, 1) + " s" +
       (events_lost ? " - " + std::to_string(events_lost) + " events LOST" : "") + (options.paused ? " - paused" : ""));
  line("");
  // Rows that fit: the status, blank and header lines, and the help line.
  size_t room = sorted.size();
  const size_t fixed_lines = 3 + (options.help_line ? 1 : 0);
  if (options.height > 0) room = options.height > fixed_lines ? options.height - fixed_lines : 1;
  const size_t first = selected >= room ? selected - room + 1 : 0;
  const size_t end = std::min(sorted.size(), first + room);
  // The cells after COMMAND: CPU %, OPS/S, LAUNCHES/S (column_fit.h's rule:
  // COMMAND narrows, then LAUNCHES/S goes; the list is sorted by the other
  // two, which stay); the command line, last, takes what is left.
  constexpr std::array<std::string_view, 3> kHeaders = {"CPU %", "OPS/S", "LAUNCHES/S"};
  std::vector<std::array<std::string, 3>> cells;
  std::array<size_t, 3> widths = {7, 10, 10};
  for (size_t i = first; i < end; ++i) {
    const TopProcessRow& r = sorted[i];
    cells.push_back({r.cpu_percent < 0 ? "-" : fixed(r.cpu_percent, 1), r.traced ? fixed(r.ops_per_s, 0) : "-",
                     r.launches ? fixed(r.launches_per_s, 0) : "-"});
    for (size_t c = 0; c < 3; ++c) widths[c] = std::max(widths[c], text_width(cells.back()[c]));
  }
  size_t pid_width = 8;
  for (size_t i = first; i < end; ++i) pid_width = std::max(pid_width, std::to_string(sorted[i].pid).size() + 1);
  const ColumnFit fit = fit_columns(options.width, 7, 16,
                                    {{pid_width, 9, true}, {widths[0], 1, true}, {widths[1], 2, true}, {widths[2], 0}});
  auto row_line = [&](const std::string& pid, std::string_view command, const std::array<std::string, 3>& numbers,
                      std::string_view cmdline) {
    std::string text = align_right(pid, pid_width) + "  " + align_left_elided(command, fit.name_width);
    for (size_t c = 0; c < 3; ++c)
      if (fit.shown[c + 1]) text += "  " + align_right(numbers[c], widths[c]);
    // Too narrow even for the kept columns: whole cells go, not digits.
    const size_t used = text_width(text);
    if (used > options.width) text = fit_text_line(text, options.width);
    else if (options.width - used > kColumnGap) {
      text = cut_to_width(text + "  " + std::string(cmdline), options.width);
      // A command line cut at a space would end the row in blanks.
      text.erase(text.find_last_not_of(' ') + 1);
    }
    out += text + '\n';
  };
  row_line("PID", "COMMAND", {std::string(kHeaders[0]), std::string(kHeaders[1]), std::string(kHeaders[2])},
           "COMMAND LINE");
  for (size_t i = first; i < end; ++i) {
    const TopProcessRow& r = sorted[i];
    const std::string mark = options.help_line && i == selected ? ">" : " ";
    row_line(mark + align_right(std::to_string(r.pid), pid_width - 1), r.comm, cells[i - first], r.cmdline);
  }
  if (sorted.empty()) line("(no process yet: PyTorch processes appear as they load libtorch_cpu)");
  if (options.help_line)
    line(options.prompt.empty() ? "Up/Down (j/k) select, Enter its op table, Esc back, p pause, q quit"
                                : options.prompt);
  return out;
}

}  // namespace gpuprof

namespace gpuprof {

std::string render_top_modules(const ModuleTree& tree, const LiveInterval& ops, const TopStatus& status,
                               const TopViewOptions& options) {
  std::string out;
  append_status(out, ops.start_ns, ops.end_ns, ops.calls, status, options,
                "modules by their ops' CPU time (as report --modules)");
  const size_t before = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  std::vector<std::string> lines;
  ModuleTableOptions table_options;
  table_options.show_events = options.module_events;
  const std::string table = format_module_table(tree, table_options);
  for (size_t at = 0; at < table.size();) {
    const size_t end = table.find('\n', at);
    lines.push_back(table.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? table.size() : end + 1;
  }
  // The filter keeps the modules whose line holds it (and the table's frame).
  const size_t below = options.help_line ? 1 : 0;
  const size_t room = options.height == 0 ? lines.size()
                      : options.height > before + below ? options.height - before - below
                                                       : 0;
  size_t shown = 0;
  for (const std::string& line : lines) {
    if (shown == room) break;
    const bool frame = line.empty() || line.front() == '-' || line.starts_with("Module");
    if (!options.filter.empty() && !frame && line.find(options.filter) == std::string::npos) continue;
    out += cut_to_width(line, options.width) + '\n';
    ++shown;
  }
  if (tree.nodes.empty() && shown < room) out += cut("(no op has settled yet)", options.width) + '\n';
  append_help(out, options);
  return out;
}

}  // namespace gpuprof
