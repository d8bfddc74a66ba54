// spread_table.h: report A B ... --by file|pid|host|rank: per op, its Self CPU
// in each group side by side as min / median / max and the slowest group
// (analyze/profile_merge.h), the straggler view of a job run as many
// processes (docs/fleet.md).
#pragma once

#include <string>
#include <string_view>

#include "analyze/profile_merge.h"

namespace gpuprof {

// The groups first (one line each), then one row per op, the largest total
// Self CPU first; row_limit as the op table's (negative: every row).
// Times as the op table prints them.
std::string format_spread_table(const OpSpreads& spreads, std::string_view by, int row_limit);

// Per op (the rows of format_spread_table, in its order and row_limit),
// its calls in each group, a column per group: --by rank's work per rank,
// which a straggler that only did more work shows at once.
std::string format_group_calls(const OpSpreads& spreads, std::string_view by, int row_limit);

}  // namespace gpuprof
