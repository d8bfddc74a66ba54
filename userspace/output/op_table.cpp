// op_table.cpp: torch.profiler's operator table (see op_table.h).
//
// Mirrors torch 1.13 _build_table with FLOPs and node ids off; CUDA time,
// memory, input-shape and source-location columns as the profile says.
#include "output/op_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>

#include "output/row_limit.h"
#include "record/probe_costs_text.h"

namespace gpuprof {

namespace {

struct SortKeyEntry {
  std::string_view name;
  SortKey key;
};

// Default first: valid_sort_key_names() and error messages use this order.
constexpr std::array<SortKeyEntry, 11> kSortKeys = {{
    {"cpu_time_total", SortKey::cpu_time_total},
    {"self_cpu_time_total", SortKey::self_cpu_time_total},
    {"cpu_time", SortKey::cpu_time},
    {"count", SortKey::count},
    {"cuda_time_total", SortKey::cuda_time_total},
    {"self_cuda_time_total", SortKey::self_cuda_time_total},
    {"cuda_time", SortKey::cuda_time},
    {"cpu_memory_usage", SortKey::cpu_memory_usage},
    {"self_cpu_memory_usage", SortKey::self_cpu_memory_usage},
    {"cuda_memory_usage", SortKey::cuda_memory_usage},
    {"self_cuda_memory_usage", SortKey::self_cuda_memory_usage},
}};

// torch's layout constants: max_name_column_width, max_shapes_column_width,
// max_src_column_width (table()'s default), DEFAULT_COLUMN_WIDTH,
// SPACING_SIZE, and MAX_STACK_ENTRY: the frames printed per row, however
// many group_by_stack_n kept.
constexpr size_t kMaxNameColumnWidth = 55;
constexpr size_t kMaxShapesColumnWidth = 80;
constexpr size_t kMaxSourceColumnWidth = 75;
constexpr size_t kColumnWidth = 12;
constexpr std::string_view kColumnSpacing = "  ";
constexpr size_t kMaxStackEntry = 5;

std::string joined_valid_keys() {
  std::string out;
  for (const auto& entry : kSortKeys) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

// Python's '{:.Nf}'.format(x) and to_chars both round the exact binary value
// correctly (ties to even), so they agree digit for digit; printf would too,
// but it follows the C locale's decimal point.
std::string fixed(double value, int precision) {
  std::array<char, 400> buffer;  // enough for any finite double in fixed form
  auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                              std::chars_format::fixed, precision);
  return std::string(buffer.data(), result.ptr);
}

// torch's _format_time_share. torch asserts when the total is zero but the
// share is not (it cannot happen with its own data); print NaN either way.
std::string format_time_share(double time_us, double total_us) {
  if (total_us == 0) return "NaN";
  return fixed(time_us * 100.0 / total_us, 2) + "%";
}

// Python's len() of a str: UTF-8 continuation bytes are not characters.
size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Python's text[:count] in code points.
std::string_view first_code_points(std::string_view text, size_t count) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (seen == count) return text.substr(0, i);
      ++seen;
    }
  }
  return text;
}

// Python's text[-count:] in code points (the whole text when shorter).
std::string_view last_code_points(std::string_view text, size_t count) {
  const size_t length = code_points(text);
  if (length <= count) return text;
  return text.substr(first_code_points(text, length - count).size());
}

// torch's trim_path: a frame longer than the source column keeps its last
// `width` code points, the first three of which become "...", so the file
// and line end of a long path stay visible.
std::string trim_path(std::string_view frame, size_t width) {
  if (code_points(frame) <= width) return std::string(frame);
  // torch keeps a tail of three or fewer code points whole; not reached
  // here, where the column is at least 4 wide.
  if (width <= 3) return std::string(last_code_points(frame, width));
  return "..." + std::string(last_code_points(frame, width - 3));
}

// One table column: its header, torch's width for it, and its alignment
// (torch's text_dir: '>' for every column but the source location's '<').
struct Column {
  std::string_view header;
  size_t width;
  bool left_aligned = false;
};

// One '{: >WIDTH}' (or '{: <WIDTH}') field plus the spacing torch appends
// after every column, the last one included (so every table line ends in
// two spaces). Python pads but never cuts a longer text.
void append_cell(std::string& line, std::string_view text, const Column& column) {
  const size_t length = code_points(text);
  const size_t padding = length < column.width ? column.width - length : 0;
  if (!column.left_aligned) line.append(padding, ' ');
  line += text;
  if (column.left_aligned) line.append(padding, ' ');
  line += kColumnSpacing;
}

// torch's row_format.format(*cells) plus its newline: one cell per column.
void append_line(std::string& out, const std::vector<std::string>& cells,
                 const std::vector<Column>& columns) {
  for (size_t c = 0; c < columns.size(); ++c) append_cell(out, cells[c], columns[c]);
  out += '\n';
}

// A row with the doubles torch would hold for it.
struct RowTimes {
  const OpRow* row;
  double self_us;
  double total_us;
  double average_us;  // FunctionEventAvg.cpu_time: 1.0 * total / count
  double self_cuda_us;
  double cuda_total_us;
  double cuda_average_us;  // FunctionEventAvg.cuda_time: 1.0 * cuda total / count
};

// Is `a` strictly before `b` for the key (larger first)? torch compares the
// memory fields as Python ints, so exactly.
bool sorts_before(const RowTimes& a, const RowTimes& b, SortKey key) {
  switch (key) {
    case SortKey::cpu_time_total: return a.total_us > b.total_us;
    case SortKey::self_cpu_time_total: return a.self_us > b.self_us;
    case SortKey::cpu_time: return a.average_us > b.average_us;
    case SortKey::count: return a.row->calls > b.row->calls;
    case SortKey::cuda_time_total: return a.cuda_total_us > b.cuda_total_us;
    case SortKey::self_cuda_time_total: return a.self_cuda_us > b.self_cuda_us;
    case SortKey::cuda_time: return a.cuda_average_us > b.cuda_average_us;
    case SortKey::cpu_memory_usage: return a.row->cpu_mem > b.row->cpu_mem;
    case SortKey::self_cpu_memory_usage: return a.row->self_cpu_mem > b.row->self_cpu_mem;
    case SortKey::cuda_memory_usage: return a.row->cuda_mem > b.row->cuda_mem;
    case SortKey::self_cuda_memory_usage: return a.row->self_cuda_mem > b.row->self_cuda_mem;
  }
  return false;
}

bool is_memory_key(SortKey key) {
  switch (key) {
    case SortKey::cpu_memory_usage:
    case SortKey::self_cpu_memory_usage:
    case SortKey::cuda_memory_usage:
    case SortKey::self_cuda_memory_usage: return true;
    case SortKey::cpu_time_total:
    case SortKey::self_cpu_time_total:
    case SortKey::cpu_time:
    case SortKey::count:
    case SortKey::cuda_time_total:
    case SortKey::self_cuda_time_total:
    case SortKey::cuda_time: return false;
  }
  return false;
}

bool is_cuda_time_key(SortKey key) {
  return key == SortKey::cuda_time_total || key == SortKey::self_cuda_time_total || key == SortKey::cuda_time;
}

// FunctionEventAvg's cpu_time and cuda_time: 0 for a row without calls.
double average(double total_us, uint64_t calls) {
  return calls == 0 ? 0.0 : total_us / static_cast<double>(calls);
}

// The profile's rows in torch's table order: by the key, largest first.
// (name, input shapes, stack) order stands in for torch's first-seen order;
// the stable sort by key then keeps it among equal keys, as Python's
// sorted(reverse=True).
std::vector<RowTimes> sorted_rows(const Profile& profile, SortKey key) {
  std::vector<RowTimes> rows;
  rows.reserve(profile.rows.size());
  for (const OpRow& row : profile.rows) {
    const double total_us = static_cast<double>(row.cpu_total_ns) / 1000.0;
    const double cuda_total_us = static_cast<double>(row.cuda_total_ns) / 1000.0;
    rows.push_back({&row, static_cast<double>(row.self_cpu_ns) / 1000.0, total_us, average(total_us, row.calls),
                    static_cast<double>(row.self_cuda_ns) / 1000.0, cuda_total_us,
                    average(cuda_total_us, row.calls)});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const RowTimes& a, const RowTimes& b) {
    if (a.row->name != b.row->name) return a.row->name < b.row->name;
    if (a.row->input_shapes != b.row->input_shapes) return a.row->input_shapes < b.row->input_shapes;
    if (a.row->stack != b.row->stack) return a.row->stack < b.row->stack;
    return a.row->on_gpu < b.row->on_gpu;
  });
  std::stable_sort(rows.begin(), rows.end(), [&](const RowTimes& a, const RowTimes& b) {
    return sorts_before(a, b, key);
  });
  return rows;
}

// The columns torch prints and their widths.
struct Layout {
  std::vector<Column> columns;
  bool has_cuda_time = false;
  bool has_memory = false;
  bool has_cuda_mem = false;
  bool has_input_shapes = false;
  bool has_stack = false;  // the last column is the source location
  size_t shapes_width = 0;
  size_t source_width = 0;
};

// Widths and the column choice cover every row, shown or not.
Layout layout_of(const std::vector<RowTimes>& rows, bool memory_recorded) {
  Layout layout;
  size_t longest_name = 0;
  size_t longest_shapes = 0;
  size_t longest_frame = 0;
  for (const RowTimes& row : rows) {
    const OpRow& op = *row.row;
    longest_name = std::max(longest_name, code_points(op.name));
    longest_shapes = std::max(longest_shapes, code_points(op.input_shapes));
    // Every frame counts, also those past kMaxStackEntry that never print.
    for (const std::string& frame : op.stack) longest_frame = std::max(longest_frame, code_points(frame));
    // torch asks for self (not total) CUDA memory > 0: a profile whose CUDA
    // memory is all freed inside the op that allocated it gets no columns.
    layout.has_cuda_mem = layout.has_cuda_mem || op.self_cuda_mem > 0;
    // torch: any(self_cuda_time_total > 0), over op and GPU rows alike.
    layout.has_cuda_time = layout.has_cuda_time || op.self_cuda_ns > 0;
    layout.has_input_shapes = layout.has_input_shapes || op.has_inputs;
    layout.has_stack = layout.has_stack || !op.stack.empty();
  }
  layout.has_memory = memory_recorded;
  layout.has_cuda_mem = layout.has_memory && layout.has_cuda_mem;
  layout.shapes_width = std::min(longest_shapes + 4, kMaxShapesColumnWidth);
  layout.source_width = std::min(longest_frame + 4, kMaxSourceColumnWidth);

  layout.columns = {{"Name", std::min(longest_name + 4, kMaxNameColumnWidth)},
                    {"Self CPU %", kColumnWidth},
                    {"Self CPU", kColumnWidth},
                    {"CPU total %", kColumnWidth},
                    {"CPU total", kColumnWidth},
                    {"CPU time avg", kColumnWidth}};
  if (layout.has_cuda_time) {
    for (std::string_view header : {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"})
      layout.columns.push_back({header, kColumnWidth});
  }
  if (layout.has_memory) {
    layout.columns.push_back({"CPU Mem", kColumnWidth});
    layout.columns.push_back({"Self CPU Mem", kColumnWidth});
  }
  if (layout.has_cuda_mem) {
    layout.columns.push_back({"CUDA Mem", kColumnWidth});
    layout.columns.push_back({"Self CUDA Mem", kColumnWidth});
  }
  layout.columns.push_back({"# of Calls", kColumnWidth});
  if (layout.has_input_shapes) layout.columns.push_back({"Input Shapes", layout.shapes_width});
  if (layout.has_stack) layout.columns.push_back({"Source Location", layout.source_width, true});
  return layout;
}

// The cells of a row's first line, one per layout column.
std::vector<std::string> row_cells(const RowTimes& row, double self_total_us, double self_cuda_total_us,
                                   const Layout& layout) {
  const OpRow& op = *row.row;
  std::vector<std::string> cells;
  // torch cuts at max - 3 code points, and also appends "..." to a name of
  // exactly that length, which then fills the 55 columns without cutting.
  std::string name = op.name;
  if (code_points(name) >= kMaxNameColumnWidth - 3) {
    name = std::string(first_code_points(name, kMaxNameColumnWidth - 3)) + "...";
  }
  cells.push_back(std::move(name));
  cells.push_back(format_time_share(row.self_us, self_total_us));
  cells.push_back(format_time_us(row.self_us));
  // torch divides "CPU total %" by the sum of self times as well.
  cells.push_back(format_time_share(row.total_us, self_total_us));
  cells.push_back(format_time_us(row.total_us));
  cells.push_back(format_time_us(row.average_us));
  if (layout.has_cuda_time) {
    cells.push_back(format_time_us(row.self_cuda_us));
    cells.push_back(format_time_share(row.self_cuda_us, self_cuda_total_us));
    cells.push_back(format_time_us(row.cuda_total_us));
    cells.push_back(format_time_us(row.cuda_average_us));
  }
  if (layout.has_memory) {
    cells.push_back(format_memory(op.cpu_mem));
    cells.push_back(format_memory(op.self_cpu_mem));
  }
  if (layout.has_cuda_mem) {
    cells.push_back(format_memory(op.cuda_mem));
    cells.push_back(format_memory(op.self_cuda_mem));
  }
  cells.push_back(std::to_string(op.calls));
  // Shapes are cut to the column width itself, without "...".
  if (layout.has_input_shapes) cells.emplace_back(first_code_points(op.input_shapes, layout.shapes_width));
  if (layout.has_stack) cells.push_back(op.stack.empty() ? "" : trim_path(op.stack[0], layout.source_width));
  return cells;
}

// What torch prints under a row of a table with stacks: its frames 2 to
// kMaxStackEntry in the source column, one line each, then a line of blank
// columns, which every row gets, one without a stack too.
void append_stack_lines(std::string& out, const std::vector<std::string>& stack,
                        const Layout& layout) {
  std::vector<std::string> cells(layout.columns.size());
  for (size_t f = 1; f < std::min(stack.size(), kMaxStackEntry); ++f) {
    cells.back() = trim_path(stack[f], layout.source_width);
    append_line(out, cells, layout.columns);
  }
  cells.back().clear();
  append_line(out, cells, layout.columns);
}

// "1 call ended" / "2 calls ended".
std::string counted(uint64_t n, std::string_view singular, std::string_view plural) {
  return std::to_string(n) + " " + std::string(n == 1 ? singular : plural);
}

}  // namespace

Result<SortKey> parse_sort_key(std::string_view name) {
  for (const auto& entry : kSortKeys) {
    if (entry.name == name) return entry.key;
  }
  return Error("unknown sort key '" + std::string(name) + "'; valid keys: " + joined_valid_keys());
}

std::string_view sort_key_name(SortKey key) {
  for (const auto& entry : kSortKeys) {
    if (entry.key == key) return entry.name;
  }
  return "?";
}

std::vector<std::string_view> valid_sort_key_names() {
  std::vector<std::string_view> names;
  for (const auto& entry : kSortKeys) names.push_back(entry.name);
  return names;
}

std::string sort_key_unavailable(SortKey key, const Profile& profile) {
  if (is_memory_key(key) && !profile.memory_recorded) {
    return "sort key " + std::string(sort_key_name(key)) +
           " needs a recording made with --profile-memory";
  }
  if (is_cuda_time_key(key) && !profile.gpu_recorded) {
    return "sort key " + std::string(sort_key_name(key)) +
           " needs GPU times: a recording of a target that had gpuprof's CUPTI shim loaded "
           "(record -- CMD loads it; see docs/cuda.md)";
  }
  return "";
}

std::string format_time_us(double time_us) {
  // The unit is chosen on the microsecond double, so 999999.9996 us is
  // "1000.000ms", never "1.000s", exactly as in torch.
  constexpr double kUsInSecond = 1000.0 * 1000.0;
  constexpr double kUsInMs = 1000.0;
  if (time_us >= kUsInSecond) return fixed(time_us / kUsInSecond, 3) + "s";
  if (time_us >= kUsInMs) return fixed(time_us / kUsInMs, 3) + "ms";
  return fixed(time_us, 3) + "us";
}

std::string format_memory(int64_t bytes) {
  // The unit is chosen on the exact magnitude (Python's abs() of an int; the
  // unsigned negation keeps INT64_MIN defined), the digits on the double
  // bytes * 1.0 / unit, which both sides round to nearest the same way.
  constexpr uint64_t kKb = 1024;
  constexpr uint64_t kMb = 1024 * kKb;
  constexpr uint64_t kGb = 1024 * kMb;
  const uint64_t magnitude =
      bytes < 0 ? 0 - static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
  const double value = static_cast<double>(bytes);
  if (magnitude >= kGb) return fixed(value / static_cast<double>(kGb), 2) + " Gb";
  if (magnitude >= kMb) return fixed(value / static_cast<double>(kMb), 2) + " Mb";
  if (magnitude >= kKb) return fixed(value / static_cast<double>(kKb), 2) + " Kb";
  return std::to_string(bytes) + " b";
}

std::string format_op_table(const Profile& profile, const TableOptions& options) {
  if (profile.rows.empty()) return "";

  const std::vector<RowTimes> rows = sorted_rows(profile, options.sort_by);
  const Layout layout = layout_of(rows, profile.memory_recorded);
  // Python's sum(): left to right in sorted order, which fixes the last bits
  // of the total.
  double self_total_us = 0;
  for (const RowTimes& row : rows) self_total_us += row.self_us;
  // torch's sum_self_cuda_time_total counts the GPU rows only (kineto's
  // device events): ops' Self CUDA is the same time seen from the CPU side.
  double self_cuda_total_us = 0;
  for (const RowTimes& row : rows)
    if (row.row->on_gpu) self_cuda_total_us += row.self_cuda_us;

  std::string separator;
  for (const Column& column : layout.columns) separator.append(column.width, '-') += kColumnSpacing;
  separator += '\n';

  std::string out = separator;
  for (const Column& column : layout.columns) append_cell(out, column.header, column);
  out += '\n';
  out += separator;

  const size_t shown = rows_shown(rows.size(), options.row_limit);
  for (size_t i = 0; i < shown; ++i) {
    append_line(out, row_cells(rows[i], self_total_us, self_cuda_total_us, layout), layout.columns);
    if (layout.has_stack) append_stack_lines(out, rows[i].row->stack, layout);
  }
  out += separator;
  out += "Self CPU time total: " + format_time_us(self_total_us) + "\n";
  if (layout.has_cuda_time) out += "Self CUDA time total: " + format_time_us(self_cuda_total_us) + "\n";
  return out;
}

std::string format_compensation_note(const Profile& profile) {
  std::string out;
  if (profile.compensation) {
    out += "gpuprof: " + describe_probe_costs(*profile.compensation) + "; --raw-times shows times as measured\n";
  } else if (profile.raw_times_asked) {
    out += "gpuprof: times as measured (--raw-times): each call's own probe hits and those of the calls inside it are in them\n";
  } else {
    out += "gpuprof: times as measured: the recording holds no probe calibration (an older gpuprof, "
           "or a failed calibration: see its warnings), so the probes' own time is in them\n";
  }
  if (profile.counters.calls_shorter_than_probes != 0)
    out += "gpuprof: " + counted(profile.counters.calls_shorter_than_probes, "call was", "calls were") +
           " shorter than their probes' estimated time (compensated to 0): the calibration may overestimate; "
           "compare with --raw-times\n";
  return out;
}

std::string format_profile_notes(const Profile& profile) {
  std::string out;
  if (!profile.rows.empty()) out += format_compensation_note(profile);
  // Each count that is not zero gets its line: "gpuprof: N <noun> <what>".
  struct CountNote {
    uint64_t count;
    const char* one;
    const char* many;
    const char* what;
  };
  const CountNote notes[] = {
      {profile.counters.calls_unwound, "call", "calls",
       " ended by exception unwinding (counted; their end time is the catch)"},
      {profile.calls_cut, "call was", "calls were",
       " still running when a cycle of recorded steps ended (counted, ending there, as torch.profiler does)"},
      {profile.ranges_ended_elsewhere, "range", "ranges",
       " ended where none was open (begun before the recording, or async: ended on another thread; not counted)"},
      {profile.events_after_cut, "event", "events",
       " of a cycle of recorded steps arrived after its end (not counted)"},
      {profile.counters.exits_without_entry, "op was", "ops were",
       " already running when recording began (their exits were ignored)"},
      {profile.counters.calls_open_at_end, "call", "calls", " still running when recording stopped (not counted)"},
      {profile.events_lost, "event", "events", " lost (ring buffer full); counts are low; try a larger --ring-buffer"},
  };
  for (const CountNote& note : notes)
    if (note.count != 0) out += "gpuprof: " + counted(note.count, note.one, note.many) + note.what + "\n";
  return out;
}

}  // namespace gpuprof
