// job_rank_line.h: a process's job rank (JobRank, from RANK, LOCAL_RANK,
// WORLD_SIZE, ... of its environment) as report prints it above its table:
// "Rank 1 of 2 (local rank 1)" (docs/fleet.md).
#pragma once

#include <string>

#include "record/recording.h"

namespace gpuprof {

// "Rank R[ of WORLD_SIZE][ (local rank L[ of LOCAL_WORLD_SIZE][, node
// GROUP_RANK])][, run TORCHELASTIC_RUN_ID]": what is known of it, nothing
// guessed.
std::string job_rank_line(const JobRank& rank);

}  // namespace gpuprof
