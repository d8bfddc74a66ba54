// job_environment.h: a process's place in a distributed job (JobRank), read
// from outside through /proc/PID/environ: the RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, TORCHELASTIC_RUN_ID, MASTER_ADDR and
// MASTER_PORT that torchrun (and DDP's other launchers) give each worker.
//
// /proc/PID/environ is the environment the process was exec'd with, not
// what it holds now: a variable set later (os.environ["RANK"] = ... in the
// script itself) is not there. torchrun sets them before it starts each
// worker, so a worker's initial environment has them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "record/recording.h"

namespace gpuprof {

// A number as torchrun writes one: decimal digits only (no sign, space or
// other character), at most 2^31 - 1; nullopt otherwise.
std::optional<uint32_t> parse_job_number(std::string_view text);

// The job rank in an environment block (NUL-separated NAME=VALUE entries,
// as /proc/PID/environ holds them) of process pid: nullopt without a RANK
// that is a number (a RANK that is not is ignored, never guessed). The
// other numbers are each absent when unset or not a number; texts longer
// than kRecordMaxJobText bytes are left out.
std::optional<JobRank> job_rank_from_environ(std::string_view environ, int32_t pid);

// The same read from `environ_path` (default /proc/PID/environ): nullopt
// when it cannot be read (the process is gone, or not ours to read) or has
// no RANK.
std::optional<JobRank> read_job_rank(int32_t pid, const std::string& environ_path = "");

}  // namespace gpuprof
