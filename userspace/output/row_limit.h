// row_limit.h: --row-limit, as every table of report applies it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace gpuprof {

// How many of `rows` a table shows under --row-limit N (N < 0: all of them).
inline size_t rows_shown(size_t rows, int row_limit) {
  return row_limit < 0 ? rows : std::min(rows, static_cast<size_t>(row_limit));
}

// "N more rows (--row-limit -1 shows all)" when the table left rows out,
// "" when it shows them all.
inline std::string rows_left_out(size_t rows, size_t shown) {
  return shown < rows ? std::to_string(rows - shown) + " more rows (--row-limit -1 shows all)" : "";
}

}  // namespace gpuprof
