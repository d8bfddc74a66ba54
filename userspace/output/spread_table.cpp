// spread_table.cpp: the straggler view of spread_table.h.
#include "output/spread_table.h"

#include <algorithm>

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

}  // namespace

std::string format_spread_table(const OpSpreads& spreads, std::string_view by, int row_limit) {
  std::string out = "Self CPU per " + std::string(by) + " (" + std::to_string(spreads.groups.size()) + "):\n";
  for (size_t g = 0; g < spreads.groups.size(); g++)
    out += "  " + std::to_string(g + 1) + ". " + spreads.groups[g] + "\n";
  if (spreads.ops.empty()) return out + "No operator calls were recorded.\n";
  size_t name_width = 4;
  for (const OpSpread& op : spreads.ops) name_width = std::max(name_width, std::min(op.name.size(), kMaxNameWidth));
  const char* columns[] = {"# of Calls", "Self CPU", "Min", "Median", "Max"};
  std::string header = left("Name", name_width);
  for (const char* c : columns) header += "  " + right(c, kColumnWidth);
  header += "  Slowest";
  const std::string rule(header.size(), '-');
  out += rule + "\n" + header + "\n" + rule + "\n";
  const size_t shown = row_limit < 0 ? spreads.ops.size() : std::min<size_t>(spreads.ops.size(), row_limit);
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
