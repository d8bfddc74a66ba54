// op_table.h: the operator table, byte for byte as torch.profiler prints it.
//
// format_op_table() returns what torch 1.13's
//   prof.key_averages(group_by_input_shape=G, group_by_stack_n=S)
//       .table(sort_by=KEY, row_limit=N)
// returns (torch/autograd/profiler_util.py, _build_table): the CUDA time
// columns and kernel rows when the recording has GPU times (kineto's, here
// from the CUPTI shim), the memory columns when it has memory data
// (profile_memory=True), the Input Shapes column when rows are grouped by
// input shape, the Source Location column when rows are grouped by stack,
// and no FLOPs or node id columns. Users diff
// our tables against theirs and feed them to the same scripts, so "close" is
// not enough; tests/golden/make_table_goldens.py produces the expected text
// with torch's own code and tests/unit/op_table_test.cpp compares exactly.
//
// torch keeps times as microseconds in doubles; a Profile keeps integer
// nanoseconds. Every time is converted once with ns / 1000.0 and then goes
// through the same double operations in the same order as torch (average,
// percentage, the footer's running sum), because near a rounding tie the
// last bit decides the printed digit: 9 ns over 6 calls averages
// (9 / 1000.0) / 6 = 0.0014999.. us, "0.001us", where (9 / 6) / 1000.0 would
// print "0.002us"; the footer sums the rows' doubles in sorted order, which
// can print 7.342ms for an exact total of 7.3415 ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/profile.h"
#include "base/result.h"

namespace gpuprof {

// The torch sort keys that gpuprof records data for. Rows are sorted by the
// key, largest first.
enum class SortKey {
  cpu_time_total,       // torch's default in gpuprof: total time including nested ops
  self_cpu_time_total,  // time not spent in nested ops
  cpu_time,             // torch's average: cpu_time_total / count
  count,                // number of calls
  // GPU time keys (the CUPTI shim): see sort_key_unavailable().
  cuda_time_total,       // GPU time of the kernels launched in the op and its nested ops
  self_cuda_time_total,  // GPU time of the kernels the op launched itself
  cuda_time,             // cuda_time_total / count
  // Memory keys (bytes, signed): only meaningful for a recording made with
  // --profile-memory; see sort_key_unavailable().
  cpu_memory_usage,
  self_cpu_memory_usage,
  cuda_memory_usage,
  self_cuda_memory_usage,
};

// Parses a torch sort-key name ("cpu_time_total"). On failure an error: one
// line for the user that lists the valid keys.
//
// A key is accepted without looking at any recording (the command line is
// checked before recording starts); whether a given profile has the key's
// data is sort_key_unavailable()'s question.
Result<SortKey> parse_sort_key(std::string_view name);

// "cpu_time_total" for SortKey::cpu_time_total, and so on.
std::string_view sort_key_name(SortKey key);

// The keys parse_sort_key accepts, default first, for --help text.
std::vector<std::string_view> valid_sort_key_names();

// "" when `profile` has the data `key` sorts on; otherwise one line for the
// user, e.g. "sort key cpu_memory_usage needs a recording made with
// --profile-memory" (or, for the CUDA time keys, GPU times from the CUPTI
// shim). torch itself would silently sort by zeros (its memory and CUDA
// fields default to 0), which looks like an answer and is not one.
std::string sort_key_unavailable(SortKey key, const Profile& profile);

struct TableOptions {
  SortKey sort_by = SortKey::cpu_time_total;
  // Rows printed, as torch's row_limit: table() defaults to 100; any
  // negative value prints every row; 0 prints the header and footer only.
  int row_limit = 100;
};

// The table as torch's table() returns it: every line, the last one
// ("Self CPU time total: ...", then "Self CUDA time total: ..." with the
// CUDA columns) included, ends in '\n' (print() adds a second one). Empty
// string for a profile with no rows, as torch.
//
// Columns, in torch's order: Name, Self CPU %, Self CPU, CPU total %,
// CPU total, CPU time avg; then, when any row (shown or not) has
// self_cuda_ns > 0, Self CUDA, Self CUDA %, CUDA total, CUDA time avg (the
// percentage of the GPU rows' summed self time, torch's "Self CUDA time
// total" footer line); then, when Profile::memory_recorded, CPU Mem and
// Self CPU Mem, followed by CUDA Mem and Self CUDA Mem when any row (shown
// or not) has self_cuda_mem > 0; then # of Calls; then Input Shapes when any
// row has_inputs (rows grouped by input shape); then Source Location when
// any row has a non-empty stack (rows grouped by stack).
//
// Source Location (torch's table() defaults): left-aligned, as wide as the
// longest frame of any row plus 4, at most 75; a longer frame prints as
// "..." and its last 72 code points. A row's line shows its first frame;
// its frames 2 to 5 follow on lines of their own with every other column
// blank (further frames are not printed but count for the width), and a
// line of blank columns ends every row, one with an empty stack too.
//
// Sorting: torch stable-sorts key_averages() (first-seen order) by the key,
// descending. Profile rows have no order, so rows with equal keys are
// ordered by name, then by input_shapes, then by stack (frame by frame),
// ascending (byte order), then op rows before GPU rows.
//
// Torch computes the footer and the percentages' denominator itself, as the
// sum of the rows' self times in sorted order; so does this function
// (Profile::self_cpu_total_ns is not read).
//
// Names, shapes and frames are measured and cut in Unicode code points
// (Python str semantics), assuming UTF-8.
std::string format_op_table(const Profile& profile, const TableOptions& options);

// gpuprof's own notes, printed after the table: what the times are
// (compensated for the probes' cost, or raw: format_compensation_note, when
// there are rows), then one line per non-zero honesty counter of the
// profile (unwound calls, ops already running at the start, calls still
// running at the end, lost events), each ending in '\n'.
std::string format_profile_notes(const Profile& profile);
// The first of them alone: what was removed per call and how it was
// calibrated (docs/overhead.md, "Compensation"), or why times are raw.
std::string format_compensation_note(const Profile& profile);

// torch's _format_time: "0.500us", "1.234ms", "12.000s" (from microseconds).
std::string format_time_us(double time_us);

// torch's _format_memory: "572 b", "-3.08 Kb", "94.79 Mb", "1.00 Gb"
// (1024-based units; two decimals rounded as Python's '{:.2f}' rounds
// bytes * 1.0 / unit).
std::string format_memory(int64_t bytes);

}  // namespace gpuprof
