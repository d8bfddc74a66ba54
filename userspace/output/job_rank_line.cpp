// job_rank_line.cpp: the rank line of job_rank_line.h.
#include "output/job_rank_line.h"

namespace gpuprof {

std::string job_rank_line(const JobRank& rank) {
  std::string out = "Rank " + std::to_string(rank.rank);
  if (rank.world_size) out += " of " + std::to_string(*rank.world_size);
  std::string local;
  if (rank.local_rank) {
    local = "local rank " + std::to_string(*rank.local_rank);
    if (rank.local_world_size) local += " of " + std::to_string(*rank.local_world_size);
  }
  if (rank.group_rank) local += (local.empty() ? "" : ", ") + std::string("node ") + std::to_string(*rank.group_rank);
  if (!local.empty()) out += " (" + local + ")";
  if (!rank.run_id.empty()) out += ", run " + rank.run_id;
  return out;
}

}  // namespace gpuprof
