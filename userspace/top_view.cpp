// top_view.cpp: one top screen as text (see the header).
#include "top_view.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "op_table.h"

namespace gpuprof {
namespace {

struct SortEntry {
  std::string_view name;
  TopSort sort;
};
constexpr std::array<SortEntry, 4> kSorts = {{{"self_cpu_time_total", TopSort::self_cpu_time_total},
                                              {"cpu_time_total", TopSort::cpu_time_total},
                                              {"cpu_time", TopSort::cpu_time},
                                              {"count", TopSort::count}}};

// Columns after Name, torch's headers, narrower than its 12 so that 80
// columns leave the name some room.
constexpr size_t kColumnWidth = 10;
constexpr std::array<std::string_view, 5> kHeaders = {"Self CPU %", "Self CPU", "CPU total", "CPU avg",
                                                      "# Calls"};
constexpr size_t kMinNameWidth = 12;
constexpr size_t kMaxNameWidth = 60;
// Status lines, the blank line and the header above the rows.
constexpr size_t kLinesAboveRows = 4;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

// Right-aligned in `width`; cut from the left ("...") when longer.
std::string right(std::string_view text, size_t width) {
  if (text.size() > width) return std::string(text.substr(0, width));
  return std::string(width - text.size(), ' ') + std::string(text);
}

// Left-aligned in `width`, cut with "..." when longer.
std::string left(std::string_view text, size_t width) {
  if (text.size() <= width) return std::string(text) + std::string(width - text.size(), ' ');
  if (width <= 3) return std::string(text.substr(0, width));
  return std::string(text.substr(0, width - 3)) + "...";
}

std::string cut(std::string line, size_t width) {
  if (line.size() > width) line.resize(width);
  return line;
}

double sort_value(const LiveOpRow& row, TopSort sort) {
  switch (sort) {
    case TopSort::self_cpu_time_total: return static_cast<double>(row.self_ns);
    case TopSort::cpu_time_total: return static_cast<double>(row.total_ns);
    case TopSort::cpu_time: return row.calls ? static_cast<double>(row.total_ns) / row.calls : 0;
    case TopSort::count: return static_cast<double>(row.calls);
  }
  return 0;
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

TopSort next_top_sort(TopSort sort) {
  for (size_t i = 0; i < kSorts.size(); ++i)
    if (kSorts[i].sort == sort) return kSorts[(i + 1) % kSorts.size()].sort;
  return TopSort::self_cpu_time_total;
}

std::optional<TopSort> top_sort_of_column(int column) {
  switch (column) {
    case 2:
    case 3: return TopSort::self_cpu_time_total;
    case 4: return TopSort::cpu_time_total;
    case 5: return TopSort::cpu_time;
    case 6: return TopSort::count;
    default: return std::nullopt;
  }
}

std::string render_top(const LiveInterval& shown, const TopStatus& status, const TopViewOptions& options) {
  const size_t width = std::max<size_t>(options.width, kMinNameWidth + kHeaders.size() * (kColumnWidth + 2));
  std::string out;
  auto line = [&](std::string text) { out += cut(std::move(text), options.width) + '\n'; };

  const double seconds = shown.end_ns > shown.start_ns ? (shown.end_ns - shown.start_ns) / 1e9 : 0;
  std::string first = "gpuprof top - " + std::to_string(status.pid) + " (" + status.comm + "), " +
                      std::to_string(status.threads) + (status.threads == 1 ? " thread" : " threads");
  if (status.cpu_percent >= 0) first += ", CPU " + fixed(status.cpu_percent, 1) + "%";
  first += ", " + (seconds > 0 ? fixed(shown.calls / seconds, 0) : std::string("0")) + " ops/s, " +
           std::to_string(status.events_lost) + " events lost";
  line(first);
  std::string second = (options.since_start ? "since start (" + fixed(seconds, 1) + " s)"
                                            : "last " + fixed(seconds, 1) + " s") +
                       " of " + fixed(status.elapsed_s, 1) + " s, sorted by " +
                       std::string(top_sort_name(options.sort));
  if (!options.filter.empty()) second += ", filter '" + options.filter + "'";
  if (options.paused) second += ", PAUSED";
  if (!status.state.empty()) second += " - " + status.state;
  line(second);
  line("");

  const size_t fixed_width = kHeaders.size() * (kColumnWidth + 2);
  const size_t name_width = std::clamp(width - fixed_width - 2, kMinNameWidth, kMaxNameWidth);
  std::string header = left("Name", name_width) + "  ";
  for (std::string_view h : kHeaders) header += right(h, kColumnWidth) + "  ";
  line(header);

  std::vector<const LiveOpRow*> rows;
  for (const LiveOpRow& row : shown.rows)
    if (options.filter.empty() || row.name.find(options.filter) != std::string::npos) rows.push_back(&row);
  // Largest first; names break ties so that the order is stable.
  std::sort(rows.begin(), rows.end(), [&](const LiveOpRow* a, const LiveOpRow* b) {
    const double va = sort_value(*a, options.sort), vb = sort_value(*b, options.sort);
    return va != vb ? va > vb : a->name < b->name;
  });
  size_t room = rows.size();
  if (options.height > 0) {
    const size_t below = options.help_line ? 1 : 0;
    room = options.height > kLinesAboveRows + below ? options.height - kLinesAboveRows - below : 0;
  }
  const double self_total_us = shown.self_ns / 1000.0;
  for (size_t i = 0; i < rows.size() && i < room; ++i) {
    const LiveOpRow& r = *rows[i];
    const double self_us = r.self_ns / 1000.0, total_us = r.total_ns / 1000.0;
    std::string text = left(r.name, name_width) + "  ";
    text += right(self_total_us > 0 ? fixed(self_us * 100.0 / self_total_us, 2) + "%" : "-", kColumnWidth) + "  ";
    text += right(format_time_us(self_us), kColumnWidth) + "  ";
    text += right(format_time_us(total_us), kColumnWidth) + "  ";
    text += right(format_time_us(r.calls ? total_us / r.calls : 0), kColumnWidth) + "  ";
    text += right(std::to_string(r.calls), kColumnWidth) + "  ";
    line(text);
  }
  if (rows.empty()) line(shown.rows.empty() ? "(no op call completed)" : "(no op matches the filter)");
  if (options.help_line) {
    // The screen's last line: pad so that the help sits at the bottom.
    size_t used = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
    while (options.height > 0 && used + 1 < options.height) {
      out += '\n';
      ++used;
    }
    if (!options.prompt.empty())
      out += cut("filter: " + options.prompt + "_  (Enter: apply, Esc: cancel)", options.width);
    else
      out += cut("q quit  s sort  2-6 sort by column  / filter  t interval/since start  p pause", options.width);
  }
  return out;
}

}  // namespace gpuprof
