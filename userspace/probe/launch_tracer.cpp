#include "probe/launch_tracer.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <string_view>

#include "launch_tracer.skel.h"
#include "symbols/elf_image.h"

namespace gpuprof {
namespace {

struct LaunchEntryPoint {
  const char* symbol;
  gp_launch_api api;
};

// The runtime API's launch functions. The _ptsz twins are what code built
// with --default-stream per-thread calls; same arguments.
constexpr LaunchEntryPoint kRuntimeEntryPoints[] = {
    {"cudaLaunchKernel", GP_LAUNCH_KERNEL},         {"cudaLaunchKernel_ptsz", GP_LAUNCH_KERNEL},
    {"cudaLaunchKernelExC", GP_LAUNCH_KERNEL_EXC},  {"cudaLaunchKernelExC_ptsz", GP_LAUNCH_KERNEL_EXC},
    {"cudaGraphLaunch", GP_LAUNCH_GRAPH},           {"cudaGraphLaunch_ptsz", GP_LAUNCH_GRAPH},
};

// The driver API's, which Triton and cuda-python call directly.
constexpr LaunchEntryPoint kDriverEntryPoints[] = {
    {"cuLaunchKernel", GP_LAUNCH_DRIVER_KERNEL},
    {"cuLaunchKernel_ptsz", GP_LAUNCH_DRIVER_KERNEL},
    {"cuLaunchKernelEx", GP_LAUNCH_DRIVER_KERNEL_EX},
    {"cuLaunchKernelEx_ptsz", GP_LAUNCH_DRIVER_KERNEL_EX},
};

int on_launch_record(void* ctx, void* data, size_t size) {
  if (size < sizeof(gp_launch_event)) return 0;
  gp_launch_event event;
  std::memcpy(&event, data, sizeof(event));
  static_cast<LaunchSinks*>(ctx)->launch(event);
  return 0;
}

// The "gpu" ring: records of three types, told apart by their first word.
int on_gpu_record(void* ctx, void* data, size_t size) {
  const LaunchSinks& sinks = *static_cast<LaunchSinks*>(ctx);
  uint32_t type = 0;
  if (size < sizeof(type)) return 0;
  std::memcpy(&type, data, sizeof(type));
  if (type == GP_GPU_CORRELATION && size >= sizeof(gp_gpu_correlation)) {
    gp_gpu_correlation c;
    std::memcpy(&c, data, sizeof(c));
    sinks.correlation(c);
  } else if (type == GP_GPU_ACTIVITY && size >= sizeof(gp_gpu_activity)) {
    gp_gpu_activity a;
    std::memcpy(&a, data, sizeof(a));
    a.name[sizeof(a.name) - 1] = 0;
    sinks.activity(a);
  } else if (type == GP_GPU_DROPPED && size >= sizeof(gp_gpu_dropped)) {
    gp_gpu_dropped d;
    std::memcpy(&d, data, sizeof(d));
    sinks.dropped(d.count);
  }
  return 0;
}

}  // namespace

Result<LaunchSites> find_launch_sites(const std::string& library_path, LaunchApi api) {
  ASSIGN_OR_RETURN(ElfImage elf, ElfImage::open(library_path));
  LaunchSites sites;
  const std::span<const LaunchEntryPoint> entry_points =
      api == LaunchApi::runtime ? std::span<const LaunchEntryPoint>(kRuntimeEntryPoints)
                                : std::span<const LaunchEntryPoint>(kDriverEntryPoints);
  elf.for_each_function([&](const ElfSymbol& sym) {
    for (const LaunchEntryPoint& entry : entry_points) {
      if (sym.name != entry.symbol) continue;
      auto offset = elf.file_offset(sym.address);
      bool seen = false;
      for (const std::string& s : sites.symbols) seen |= s == entry.symbol;
      if (!offset || seen) continue;  // .symtab and .dynsym both list it
      sites.offsets.push_back(*offset);
      sites.cookies.push_back(entry.api);
      sites.symbols.push_back(entry.symbol);
    }
  });
  if (sites.offsets.empty())
    return Error(library_path + (api == LaunchApi::runtime
                                     ? " has no cudaLaunchKernel, cudaLaunchKernelExC or cudaGraphLaunch"
                                     : " has no cuLaunchKernel or cuLaunchKernelEx"));
  return sites;
}

LaunchTracer::LaunchTracer(LaunchSinks sinks) : bpf_("the launch BPF program"), sinks_(std::move(sinks)) {}

Result<std::unique_ptr<LaunchTracer>> LaunchTracer::load(uint32_t ring_buffer_bytes, LaunchSinks sinks) {
  std::unique_ptr<LaunchTracer> tracer(new LaunchTracer(std::move(sinks)));
  BpfProgram<launch_tracer_bpf>& bpf = tracer->bpf_;
  RETURN_IF_ERROR(bpf.open());
  bpf_map__set_max_entries(bpf->maps.launches, ring_buffer_bytes);
  bpf_map__set_max_entries(bpf->maps.gpu, ring_buffer_bytes);
  expect_uprobe_multi(bpf->progs.on_launch);
  RETURN_IF_ERROR(bpf.load());
  RETURN_IF_ERROR(bpf.read_ring(bpf->maps.launches, on_launch_record, &tracer->sinks_, "launch"));
  RETURN_IF_ERROR(bpf.read_ring(bpf->maps.gpu, on_gpu_record, &tracer->sinks_, "GPU record"));
  return tracer;
}

LaunchTracer::~LaunchTracer() { detach(); }

Result<void> LaunchTracer::attach(const std::string& path, const LaunchSites& sites, int pid) {
  RETURN_IF_ERROR(
      UprobeMultiLink::attach_into(links_, bpf_->progs.on_launch, path, sites.offsets, sites.cookies, pid));
  __atomic_store_n(&bpf_->bss->tracing_on, 1u, __ATOMIC_SEQ_CST);
  return {};
}

bool LaunchTracer::add_runtime_range(uint64_t lo, uint64_t hi) {
  if (runtime_ranges_ == GP_MAX_RUNTIMES) return false;
  // lo first: a half-written slot (hi still 0) matches nothing.
  __atomic_store_n(&bpf_->bss->runtime_lo[runtime_ranges_], lo, __ATOMIC_SEQ_CST);
  __atomic_store_n(&bpf_->bss->runtime_hi[runtime_ranges_], hi, __ATOMIC_SEQ_CST);
  runtime_ranges_++;
  return true;
}

uint64_t LaunchTracer::driver_calls_from_runtime() const { return read_bpf_counter(bpf_->bss->driver_calls_from_runtime); }

Result<void> LaunchTracer::attach_shim(const std::string& path, int pid) {
  const std::pair<bpf_program*, const char*> probes[] = {
      {bpf_->progs.on_gpu_launch, "launch"},
      {bpf_->progs.on_gpu_activity, "activity"},
      {bpf_->progs.on_gpu_dropped, "dropped"},
  };
  for (const auto& [program, name] : probes) {
    bpf_link* link = bpf_program__attach_usdt(program, pid, path.c_str(), "gpuprof", name, nullptr);
    if (!link) {
      const int err = errno;
      for (bpf_link* l : shim_links_) bpf_link__destroy(l);
      shim_links_.clear();
      return Error(std::string("cannot attach to the USDT probe gpuprof:") + name + " of " + path + ": " +
                   std::strerror(err));
    }
    shim_links_.push_back(link);
  }
  __atomic_store_n(&bpf_->bss->tracing_on, 1u, __ATOMIC_SEQ_CST);
  return {};
}

void LaunchTracer::detach() {
  if (bpf_) __atomic_store_n(&bpf_->bss->tracing_on, 0u, __ATOMIC_SEQ_CST);
  links_.clear();
  // Closing the USDT links also drops the semaphores the kernel raised:
  // the shim stops firing its probes.
  for (bpf_link* l : shim_links_) bpf_link__destroy(l);
  shim_links_.clear();
}

void LaunchTracer::detach_launches() {
  links_.clear();
  // attach_shim's first link is gpuprof:launch.
  if (!shim_links_.empty()) {
    bpf_link__destroy(shim_links_.front());
    shim_links_.erase(shim_links_.begin());
  }
}

void LaunchTracer::drop_activities_after(uint64_t last) {
  if (bpf_) __atomic_store_n(&bpf_->bss->last_recorded_correlation, last, __ATOMIC_SEQ_CST);
}

uint64_t LaunchTracer::lost() const { return read_bpf_counter(bpf_->bss->launches_lost); }

uint64_t LaunchTracer::gpu_records_lost() const { return read_bpf_counter(bpf_->bss->gpu_records_lost); }

}  // namespace gpuprof
