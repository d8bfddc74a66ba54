#include "probe/cpu_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>

#include "cpu_sampler.skel.h"

namespace gpuprof {
namespace {

int on_sample(void* ctx, void* data, size_t size) {
  // A sample holds only the frames walked (py_depth Python frames, then
  // kernel_depth kernel addresses); what the record lacks is not trusted.
  constexpr size_t kHeader = offsetof(gp_cpu_sample, frames);
  if (size < kHeader) return 0;
  gp_cpu_sample sample;
  std::memcpy(&sample, data, std::min(size, sizeof(sample)));
  const size_t words = (std::min(size, sizeof(sample)) - kHeader) / 8;
  sample.py_depth = static_cast<uint32_t>(std::min<size_t>({sample.py_depth, GP_MAX_PY_FRAMES, words / 2}));
  sample.kernel_depth = static_cast<uint32_t>(
      std::min<size_t>({sample.kernel_depth, GP_MAX_KERNEL_FRAMES, words - 2 * sample.py_depth}));
  (*static_cast<CpuSampler::Sink*>(ctx))(sample);
  return 0;
}

// CPUs that are online: perf events cannot be opened on the others.
std::vector<int> online_cpus() {
  std::vector<int> cpus;
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string ranges;
  std::getline(in, ranges);
  size_t at = 0;
  while (at < ranges.size()) {
    size_t comma = ranges.find(',', at);
    std::string range = ranges.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int first = 0, last = 0;
    if (std::sscanf(range.c_str(), "%d-%d", &first, &last) == 2) {
      for (int c = first; c <= last; c++) cpus.push_back(c);
    } else if (std::sscanf(range.c_str(), "%d", &first) == 1) {
      cpus.push_back(first);
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return cpus;
}

}  // namespace

CpuSampler::CpuSampler(Sink sink) : bpf_("the sampling BPF program"), sink_(std::move(sink)) {}

Result<std::unique_ptr<CpuSampler>> CpuSampler::start(int tgid, uint32_t hz, Sink sink) {
  std::unique_ptr<CpuSampler> sampler(new CpuSampler(std::move(sink)));
  RETURN_IF_ERROR(sampler->bpf_.open());
  sampler->bpf_->rodata->target_tgid = static_cast<uint32_t>(tgid);
  RETURN_IF_ERROR(sampler->bpf_.load());
  RETURN_IF_ERROR(sampler->bpf_.read_ring(sampler->bpf_->maps.samples, on_sample, &sampler->sink_, "sample"));
  RETURN_IF_ERROR(sampler->open_perf_events(hz));
  return sampler;
}

Result<void> CpuSampler::open_perf_events(uint32_t hz) {
  for (int cpu : online_cpus()) {
    perf_event_attr attr = {};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.freq = 1;
    attr.sample_freq = hz;
    int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0)
      return Error("cannot open a CPU-clock perf event on CPU " + std::to_string(cpu) + ": " + std::strerror(errno) +
                   (errno == EINVAL ? " (is -F above kernel.perf_event_max_sample_rate?)" : ""));
    perf_fds_.push_back(fd);
    bpf_link* link = bpf_program__attach_perf_event(bpf_->progs.on_cpu_sample, fd);
    if (!link)
      return Error("cannot attach the sampling program on CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
    links_.push_back(link);
  }
  if (links_.empty()) return Error("no online CPU to sample");
  return {};
}

CpuSampler::~CpuSampler() { stop(); }

// May run while sampling (a launched command's interpreter comes up late):
// the program reads the fields only once `enabled` is set, so that goes last.
void CpuSampler::set_python(const gp_python_config& config) {
  gp_python_config fields = config;
  fields.enabled = 0;
  __atomic_store_n(&bpf_->bss->python.enabled, 0u, __ATOMIC_SEQ_CST);
  bpf_->bss->python = fields;
  __atomic_store_n(&bpf_->bss->python.enabled, config.enabled, __ATOMIC_SEQ_CST);
}

bool CpuSampler::set_process_python(uint32_t pid, const gp_python_config& config) {
  return bpf_map_update_elem(bpf_map__fd(bpf_->maps.python_of_process), &pid, &config, BPF_ANY) == 0;
}

void CpuSampler::forget_process_python(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(bpf_->maps.python_of_process), &pid);
}

void CpuSampler::set_sampling(bool on) {
  __atomic_store_n(&bpf_->bss->sampling_on, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}

void CpuSampler::stop() {
  if (bpf_) set_sampling(false);
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
  for (int fd : perf_fds_) close(fd);
  perf_fds_.clear();
}

uint64_t CpuSampler::lost() const { return read_bpf_counter(bpf_->bss->samples_lost); }

}  // namespace gpuprof
