// job_environment.cpp: the job rank from a process's initial environment.
#include "target/job_environment.h"

#include <fstream>
#include <utility>

#include "record/record_file.h"

namespace gpuprof {
namespace {

// The environment block's longest that is read: far above any real one
// (the kernel caps argv and environ together at a quarter of the stack
// limit), so memory stays bounded even for a huge one.
constexpr size_t kMaxEnvironBytes = 16u << 20;

}  // namespace

std::optional<uint32_t> parse_job_number(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > kRecordMaxJobNumber) return std::nullopt;
  return static_cast<uint32_t>(value);
}

std::optional<JobRank> job_rank_from_environ(std::string_view environ, int32_t pid) {
  JobRank job;
  job.pid = pid;
  std::optional<uint32_t> rank;
  // The first definition of a name wins, as getenv() finds it.
  bool seen[9] = {};
  auto once = [&](int i) { return !std::exchange(seen[i], true); };
  while (!environ.empty()) {
    const size_t end = environ.find('\0');
    const std::string_view entry = environ.substr(0, end);
    environ.remove_prefix(end == std::string_view::npos ? environ.size() : end + 1);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    auto number = [&](int i, std::optional<uint32_t>& into) {
      if (once(i)) into = parse_job_number(value);
    };
    auto text = [&](int i, std::string& into) {
      if (once(i) && value.size() <= kRecordMaxJobText) into = value;
    };
    if (name == "RANK") number(0, rank);
    else if (name == "LOCAL_RANK") number(1, job.local_rank);
    else if (name == "WORLD_SIZE") number(2, job.world_size);
    else if (name == "LOCAL_WORLD_SIZE") number(3, job.local_world_size);
    else if (name == "GROUP_RANK") number(4, job.group_rank);
    else if (name == "MASTER_PORT") number(5, job.master_port);
    else if (name == "TORCHELASTIC_RUN_ID") text(6, job.run_id);
    else if (name == "MASTER_ADDR") text(7, job.master_addr);
  }
  if (!rank) return std::nullopt;
  job.rank = *rank;
  return job;
}

std::optional<JobRank> read_job_rank(int32_t pid, const std::string& environ_path) {
  std::ifstream in(environ_path.empty() ? "/proc/" + std::to_string(pid) + "/environ" : environ_path,
                   std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes;
  char block[64 << 10];
  while (bytes.size() < kMaxEnvironBytes && in.read(block, sizeof block).gcount() > 0)
    bytes.append(block, static_cast<size_t>(in.gcount()));
  if (in.bad()) return std::nullopt;
  return job_rank_from_environ(bytes, pid);
}

}  // namespace gpuprof
