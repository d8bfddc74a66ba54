#include "base/text_table.h"

#include <algorithm>

namespace gpuprof {

std::string format_text_table(const std::vector<std::vector<std::string>>& cells, size_t right_aligned) {
  if (cells.empty()) return "";
  const size_t columns = cells[0].size();
  std::vector<size_t> width(columns, 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < columns && c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string rule;
  for (size_t c = 0; c < columns; ++c) rule += (c ? "  " : "") + std::string(width[c], '-');
  rule += "\n";
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < columns; ++c) {
      const std::string& cell = c < row.size() ? row[c] : std::string();
      const std::string fill(width[c] - cell.size(), ' ');
      const bool right = c + right_aligned >= columns;
      const bool last = c + 1 == columns;
      out += (c ? "  " : "") + (right ? fill + cell : cell + (last ? "" : fill));
    }
    return out + "\n";
  };
  std::string out = rule + line(cells[0]) + rule;
  for (size_t i = 1; i < cells.size(); ++i) out += line(cells[i]);
  return out + rule;
}

}  // namespace gpuprof
