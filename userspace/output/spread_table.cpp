// spread_table.cpp: the straggler view of spread_table.h.
#include "output/spread_table.h"

#include <algorithm>
#include <vector>

#include "output/op_table.h"

namespace gpuprof {
namespace {

constexpr size_t kMaxNameWidth = 55;
constexpr size_t kColumnWidth = 12;

std::string right(std::string_view text, size_t width) {
  return std::string(width > text.size() ? width - text.size() : 0, ' ') + std::string(text);
}

std::string left(std::string_view text, size_t width) {
  std::string out(text.substr(0, width));
  return out + std::string(width - out.size(), ' ');
}

size_t name_width_of(const OpSpreads& spreads) {
  size_t width = 4;
  for (const OpSpread& op : spreads.ops) width = std::max(width, std::min(op.name.size(), kMaxNameWidth));
  return width;
}

size_t rows_shown(const OpSpreads& spreads, int row_limit) {
  return row_limit < 0 ? spreads.ops.size() : std::min<size_t>(spreads.ops.size(), row_limit);
}

}  // namespace

std::string format_group_calls(const OpSpreads& spreads, std::string_view by, int row_limit) {
  if (spreads.ops.empty()) return "";
  const size_t name_width = name_width_of(spreads);
  std::vector<size_t> widths;
  std::string header = left("Name", name_width);
  for (const std::string& group : spreads.groups) {
    widths.push_back(std::max(kColumnWidth, group.size()));
    header += "  " + right(group, widths.back());
  }
  const std::string rule(header.size(), '-');
  std::string out = "Calls per " + std::string(by) + ":\n" + rule + "\n" + header + "\n" + rule + "\n";
  for (size_t i = 0; i < rows_shown(spreads, row_limit); i++) {
    const OpSpread& op = spreads.ops[i];
    out += left(op.name, name_width);
    for (size_t g = 0; g < widths.size(); g++)
      out += "  " + right(std::to_string(g < op.calls_of_group.size() ? op.calls_of_group[g] : 0), widths[g]);
    out += "\n";
  }
  return out + rule + "\n";
}

std::string format_spread_table(const OpSpreads& spreads, std::string_view by, int row_limit) {
  std::string out = "Self CPU per " + std::string(by) + " (" + std::to_string(spreads.groups.size()) + "):\n";
  for (size_t g = 0; g < spreads.groups.size(); g++)
    out += "  " + std::to_string(g + 1) + ". " + spreads.groups[g] + "\n";
  if (spreads.ops.empty()) return out + "No operator calls were recorded.\n";
  const size_t name_width = name_width_of(spreads);
  const char* columns[] = {"# of Calls", "Self CPU", "Min", "Median", "Max"};
  std::string header = left("Name", name_width);
  for (const char* c : columns) header += "  " + right(c, kColumnWidth);
  header += "  Slowest";
  const std::string rule(header.size(), '-');
  out += rule + "\n" + header + "\n" + rule + "\n";
  const size_t shown = rows_shown(spreads, row_limit);
  for (size_t i = 0; i < shown; i++) {
    const OpSpread& op = spreads.ops[i];
    out += left(op.name, name_width) + "  " + right(std::to_string(op.calls), kColumnWidth);
    for (uint64_t ns : {op.self_cpu_ns, op.min_ns, op.median_ns, op.max_ns})
      out += "  " + right(format_time_us(static_cast<double>(ns) / 1000.0), kColumnWidth);
    out += "  " + op.slowest + "\n";
  }
  out += rule + "\n";
  if (shown < spreads.ops.size())
    out += std::to_string(spreads.ops.size() - shown) + " more ops (--row-limit -1 prints every row)\n";
  return out;
}

}  // namespace gpuprof
