// op_table.h: the operator table, byte for byte as torch.profiler prints it.
//
// format_op_table() returns what torch 1.13's
//   prof.key_averages().table(sort_by=KEY, row_limit=N)
// returns for a CPU-only profile (torch/autograd/profiler_util.py,
// _build_table): no CUDA, memory, shape or stack columns. Users diff our
// tables against theirs and feed them to the same scripts, so "close" is not
// enough; tests/golden/make_table_goldens.py produces the expected text with
// torch's own code and tests/unit/op_table_test.cpp compares exactly.
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

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile.h"

namespace gpuprof {

// The torch sort keys that a CPU op recording has data for. Rows are sorted
// by the key, largest first.
enum class SortKey {
  cpu_time_total,       // torch's default in gpuprof: total time including nested ops
  self_cpu_time_total,  // time not spent in nested ops
  cpu_time,             // torch's average: cpu_time_total / count
  count,                // number of calls
};

// Parses a torch sort-key name ("cpu_time_total"). On failure returns
// nullopt and, when `error` is not null, sets it to one line for the user:
// torch's CUDA and memory keys (cuda_time_total, self_cuda_time_total,
// cuda_time, cpu_memory_usage, ...) are recognised and rejected with the
// reason (the data is not recorded yet); anything else lists the valid keys.
std::optional<SortKey> parse_sort_key(std::string_view name, std::string* error);

// "cpu_time_total" for SortKey::cpu_time_total, and so on.
std::string_view sort_key_name(SortKey key);

// The keys parse_sort_key accepts, default first, for --help text.
std::vector<std::string_view> valid_sort_key_names();

struct TableOptions {
  SortKey sort_by = SortKey::cpu_time_total;
  // Rows printed, as torch's row_limit: table() defaults to 100; any
  // negative value prints every row; 0 prints the header and footer only.
  int row_limit = 100;
};

// The table as torch's table() returns it: every line, the last one
// ("Self CPU time total: ...") included, ends in '\n' (print() adds a second
// one). Empty string for a profile with no rows, as torch.
//
// Sorting: torch stable-sorts key_averages() (first-seen order) by the key,
// descending. Profile rows have no order, so rows with equal keys are
// ordered by name ascending (byte order).
//
// Torch computes the footer and the percentages' denominator itself, as the
// sum of the rows' self times in sorted order; so does this function
// (Profile::self_cpu_total_ns is not read).
//
// Names are measured and cut in Unicode code points (Python str semantics),
// assuming UTF-8.
std::string format_op_table(const Profile& profile, const TableOptions& options);

// gpuprof's own notes, printed after the table: one line per non-zero
// honesty counter of the profile (unwound calls, ops already running at the
// start, calls still running at the end, lost events), each ending in '\n'.
// Empty when there is nothing to say.
std::string format_profile_notes(const Profile& profile);

// torch's _format_time: "0.500us", "1.234ms", "12.000s" (from microseconds).
std::string format_time_us(double time_us);

}  // namespace gpuprof
