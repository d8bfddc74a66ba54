// text_table.h: plain aligned text tables for gpuprof's own views
// (report --launches, --kernels), which have no torch.profiler format to
// follow: a dashed rule, the header, a rule, the rows, a rule; two spaces
// between columns; the last `right_aligned` columns (numbers) right-aligned,
// the others left-aligned; no trailing spaces.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuprof {

// cells[0] is the header; every row has its size.
std::string format_text_table(const std::vector<std::vector<std::string>>& cells, size_t right_aligned);

}  // namespace gpuprof
