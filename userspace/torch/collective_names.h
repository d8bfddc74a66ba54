// collective_names.h: the rows of torch.distributed's collectives, from
// libtorch_cpu's exported symbols (docs/fleet.md, "Collectives").
//
// A collective is no aten op: `dist.all_reduce` reaches a process group's
// backend (c10d::ProcessGroupGloo, ProcessGroupMPI, ProcessGroupUCC: the
// CPU backends libtorch_cpu holds) through torch 2.x's dispatcher op
// c10d::allreduce_, or on torch 1.13 through c10d::ops, neither of which
// has an at::_ops entry point. The backend's method, exported on both,
// enqueues the work and returns; the caller then blocks in the work's
// wait(). Both are probed like ops, named by their class path:
//   c10d::ProcessGroupGloo::allreduce     (the enqueue; one per collective)
//   c10d::Work::wait                      (the wait for any collective's work)
//   c10d::ProcessGroupGloo::SendWork::wait
// so a rank's table shows how many collectives it issued and how long it
// waited on them: a straggler waits least, the ranks it holds up most.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuprof {

// "_ZN4c10d16ProcessGroupGloo9allreduceERSt6vector..." ->
// "c10d::ProcessGroupGloo::allreduce"; "_ZN4c10d4Work4waitENSt6chrono..."
// -> "c10d::Work::wait"; nullopt for any other symbol.
std::optional<std::string> collective_of_symbol(std::string_view mangled_symbol);

}  // namespace gpuprof
