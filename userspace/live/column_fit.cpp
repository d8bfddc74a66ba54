// column_fit.cpp: live tables in a terminal's width (see the header).
#include "live/column_fit.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace gpuprof {
namespace {

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The first `count` code points of `text` (all of it when shorter).
std::string_view first_columns(std::string_view text, size_t count) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_continuation_byte(text[i])) continue;
    if (seen == count) return text.substr(0, i);
    ++seen;
  }
  return text;
}

}  // namespace

ColumnFit fit_columns(size_t width, size_t name_min, size_t name_max, const std::vector<FitColumn>& columns) {
  ColumnFit fit;
  fit.shown.assign(columns.size(), true);
  size_t used = 0;
  for (const FitColumn& c : columns) used += c.width + kColumnGap;
  // The columns in the order they go.
  std::vector<size_t> order(columns.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return columns[a].drop_rank < columns[b].drop_rank; });
  for (size_t i : order) {
    if (used + name_min <= width) break;
    if (columns[i].keep) continue;
    fit.shown[i] = false;
    used -= columns[i].width + kColumnGap;
  }
  fit.name_width = used + name_min <= width ? std::min(name_max, width - used) : name_min;
  return fit;
}

size_t text_width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation_byte(c); }));
}

std::string align_right(std::string_view text, size_t width) {
  const size_t have = text_width(text);
  return std::string(have < width ? width - have : 0, ' ') + std::string(text);
}

std::string align_left_elided(std::string_view text, size_t width) {
  const size_t have = text_width(text);
  if (have <= width) return std::string(text) + std::string(width - have, ' ');
  if (width == 0) return "";
  return std::string(first_columns(text, width - 1)) + "…";
}

std::string cut_to_width(std::string_view line, size_t width) { return std::string(first_columns(line, width)); }

std::string fit_text_line(std::string_view line, size_t width) {
  if (text_width(line) <= width) return std::string(line);
  const std::string_view room = first_columns(line, width);
  size_t cut = std::string_view::npos;
  for (std::string_view separator : std::array<std::string_view, 3>{", ", " - ", "  "}) {
    // A separator that starts within the room: the text before it fits.
    const size_t at = line.substr(0, room.size() + separator.size()).rfind(separator);
    if (at != std::string_view::npos && at > 0 && (cut == std::string_view::npos || at > cut)) cut = at;
  }
  return std::string(cut == std::string_view::npos ? room : line.substr(0, cut));
}

}  // namespace gpuprof
