// column_fit.h: which columns of a live table fit a terminal's width, and
// the cells' text (docs/top.md, "Narrow terminals").
//
// The rule: a number is never cut. A table has one elastic text column (an
// op's name, a process's command), which takes what is left, up to its
// widest, and narrows first (elided with "…"), down to its narrowest; only
// then do number columns go, whole, one at a time in a fixed order, never
// the one the table is sorted by. A number wider than its column widens the
// column (the caller measures its cells). Widths count code points, as a
// terminal shows UTF-8 text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuprof {

// The gap between two columns.
constexpr size_t kColumnGap = 2;

struct FitColumn {
  size_t width = 0;   // its widest cell or header, without the gap before it
  int drop_rank = 0;  // the columns go lowest rank first
  bool keep = false;  // the sort key's column: never goes
};

struct ColumnFit {
  std::vector<bool> shown;  // per column, as given
  size_t name_width = 0;    // the elastic column's width
};

// Lays out `columns` (each taking its gap as well) and the elastic column
// in `width`: the elastic one between name_min and name_max, the numbers
// that fit. When even the kept columns leave less than name_min, the
// elastic column gets name_min and the line is wider than `width`.
ColumnFit fit_columns(size_t width, size_t name_min, size_t name_max, const std::vector<FitColumn>& columns);

// Code points in `text` (a terminal column each).
size_t text_width(std::string_view text);
// `text` padded to `width` on the left (right-aligned); never cut.
std::string align_right(std::string_view text, size_t width);
// `text` padded to `width` on the right; longer, its first width - 1 code
// points and "…".
std::string align_left_elided(std::string_view text, size_t width);
// The first `width` code points of `line`: for a row whose last column is
// free text (a Python line, a command line), laid out so that only that
// text is cut.
std::string cut_to_width(std::string_view line, size_t width);
// A line of text (a status or help line) in `width`: whole when it fits,
// else up to the last separator (", ", " - " or two spaces) that fits, so
// that no figure is cut; only a line with no such place is cut at `width`.
std::string fit_text_line(std::string_view line, size_t width);

}  // namespace gpuprof
