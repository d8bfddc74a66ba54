// gpuprof_cupti_probes.h: the contract between libgpuprof_cupti.so (the CUPTI
// injection shim) and gpuprof, which reads it from outside the process.
//
// gpuprof does not include this file (its BPF side cannot include
// <sys/sdt.h>); bpf/launch_tracer.bpf.c and userspace/collect/target_gpu.cpp
// follow it by documentation. Change both sides together.
//
// ## USDT probes (provider "gpuprof", with semaphores)
//
// Each probe has a semaphore (an unsigned short in the shim's ".probes"
// section, named in the stapsdt note). The kernel raises it while a uprobe
// is attached (libbpf passes it as the uprobe's ref_ctr_offset); the shim
// fires a probe only while its semaphore is nonzero. The semaphores are
// also the shim's signal to switch CUPTI on: its watcher thread turns CUPTI
// on within ~50 ms of any of them going up and off once all are down
// (gpuprof_cupti.cpp), so with no tracer CUPTI calls the shim for nothing.
//
//   gpuprof:launch(u64 correlation_id, u32 domain, u32 cbid)
//     On the launching thread, at the entry (CUPTI_API_ENTER) of a launch
//     API: CUpti_CallbackDomain 2 (runtime) with cbid 211/214
//     (cudaLaunchKernel, _ptsz), 430/431 (cudaLaunchKernelExC, _ptsz),
//     311/312 (cudaGraphLaunch, _ptsz), and the copies and fills whose
//     memcpy/memset records need their op: 31/215 (cudaMemcpy, _ptds),
//     41/225 (cudaMemcpyAsync, _ptsz), 49/233 (cudaMemset, _ptds), 51/235
//     (cudaMemsetAsync, _ptsz); domain 1 (driver) with 307/442
//     (cuLaunchKernel, _ptsz), 652/653 (cuLaunchKernelEx, _ptsz), 514/515
//     (cuGraphLaunch, _ptsz). The driver call a runtime launch makes inside
//     itself carries the runtime call's correlation id; the shim fires only
//     the runtime one (one probe per correlation id per thread). A driver
//     launch fires when it is called directly (Triton, cuda-python).
//
//   gpuprof:activity(u32 kind, u64 correlation_id, u64 start_ns, u64 end_ns,
//                    u32 device, u32 stream, u64 bytes, const char* name)
//     On CUPTI's worker thread (or the thread that called
//     cuptiActivityFlushAll) as it hands back a buffer: one per record.
//     kind: 1 kernel, 2 memcpy, 3 memset (GPUPROF_ACTIVITY_*).
//     start/end: CLOCK_MONOTONIC ns (the shim registers that clock with
//     CUPTI, so they compare with bpf_ktime_get_ns()); both 0 when CUPTI
//     could not time it (a forced flush of an unfinished record, or no
//     device memory for timestamps): skip such records.
//     bytes: 0 for kernels; memcpy and memset: the byte count in bits 0..39
//     (cut to 1 TiB - 1) and, for torch.profiler's names ("Memcpy HtoD
//     (Pageable -> Device)", "Memset (Device)"), the record's kinds above
//     it: memcpy CUpti_ActivityMemcpyKind in bits 56..63 and the source and
//     destination CUpti_ActivityMemoryKind in bits 48..55 and 40..47;
//     memset its CUpti_ActivityMemoryKind in bits 40..47
//     (gpuprof_pack_memcpy/gpuprof_pack_memset).
//     name: kernels only (nullptr otherwise), a pointer into the target that
//     stays valid while the process lives (CUPTI owns the string); read it
//     with bpf_probe_read_user_str.
//     A graph launch gives all its kernels the graph launch's correlation id.
//
//   gpuprof:dropped(u64 count)
//     Records CUPTI dropped since the last buffer (no buffer space), fired
//     after that buffer's activity probes, only when count > 0.
//
// ## gpuprof_cupti_state
//
// `extern "C" volatile int gpuprof_cupti_state` (a dynamic symbol of the
// shim, in .data/.bss): gpuprof reads it from the target's memory to know
// when CUPTI is on and to say why there are no GPU times. InitializeInjection
// sets it before it returns (never 0 after): 2 and 4 are final; otherwise
// the shim's watcher moves it as tracers come and go: 6 while no tracer is
// attached, 1 (or 3, or 5) while one is, set only once every CUPTI call of
// the switch is made; 7 from the moment the job's own profiler took CUPTI
// from a tracing shim (set by the job's thread, in its cuptiSubscribe).
#pragma once

// Before <sys/sdt.h>: makes each probe's note name its semaphore.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

enum GpuprofCuptiState : int {
  GPUPROF_CUPTI_NOT_INITIALIZED = 0,  // loaded; InitializeInjection not called (yet)
  GPUPROF_CUPTI_TRACING = 1,          // a tracer is attached; subscribed, launch and activity probes live
  GPUPROF_CUPTI_DISABLED = 2,         // GPUPROF_CUPTI=0 in the environment
  GPUPROF_CUPTI_TAKEN = 3,            // a tracer is attached, but another subscriber holds CUPTI
                                      // (torch.profiler, Nsight): asked again every second
  GPUPROF_CUPTI_NO_LIBCUPTI = 4,      // libcupti not found, or a required symbol missing
  GPUPROF_CUPTI_ERROR = 5,            // any other CUPTI error (logged on stderr); asked again at the next attach
  GPUPROF_CUPTI_DORMANT = 6,          // initialized, no tracer attached: CUPTI not called at all
  GPUPROF_CUPTI_YIELDED = 7,          // a tracer is attached, but the shim gave CUPTI up to the job's own
                                      // profiler when it asked for it: asked again every second
};

// gpuprof:activity's kind argument.
enum GpuprofActivityKind : unsigned {
  GPUPROF_ACTIVITY_KERNEL = 1,
  GPUPROF_ACTIVITY_MEMCPY = 2,
  GPUPROF_ACTIVITY_MEMSET = 3,
};

// gpuprof:activity's bytes argument (see above).
#define GPUPROF_ACTIVITY_BYTES_MASK ((1ull << 40) - 1)
static inline unsigned long long gpuprof_pack_memcpy(unsigned long long bytes, unsigned copy_kind,
                                                     unsigned src_kind, unsigned dst_kind) {
  return (bytes & GPUPROF_ACTIVITY_BYTES_MASK) | ((unsigned long long)(copy_kind & 0xff) << 56) |
         ((unsigned long long)(src_kind & 0xff) << 48) | ((unsigned long long)(dst_kind & 0xff) << 40);
}
static inline unsigned long long gpuprof_pack_memset(unsigned long long bytes, unsigned memory_kind) {
  return (bytes & GPUPROF_ACTIVITY_BYTES_MASK) | ((unsigned long long)(memory_kind & 0xff) << 40);
}

// Defined in gpuprof_cupti.cpp. Hidden: tracers find them through the
// stapsdt note, and the process needs no symbol for them.
#define GPUPROF_SEMAPHORE_ATTRS __attribute__((unused, section(".probes"), visibility("hidden")))
extern volatile unsigned short gpuprof_launch_semaphore GPUPROF_SEMAPHORE_ATTRS;
extern volatile unsigned short gpuprof_activity_semaphore GPUPROF_SEMAPHORE_ATTRS;
extern volatile unsigned short gpuprof_dropped_semaphore GPUPROF_SEMAPHORE_ATTRS;

#define GPUPROF_LAUNCH_ENABLED() __builtin_expect(gpuprof_launch_semaphore != 0, 0)
#define GPUPROF_ACTIVITY_ENABLED() __builtin_expect(gpuprof_activity_semaphore != 0, 0)
#define GPUPROF_DROPPED_ENABLED() __builtin_expect(gpuprof_dropped_semaphore != 0, 0)

// The casts fix each argument's size in the note (8@, 4@), which is what the
// BPF side's BPF_USDT() declarations rely on.
#define GPUPROF_LAUNCH(correlation_id, domain, cbid)                                            \
  STAP_PROBE3(gpuprof, launch, (unsigned long long)(correlation_id), (unsigned)(domain), \
              (unsigned)(cbid))
#define GPUPROF_ACTIVITY(kind, correlation_id, start, end, device, stream, bytes, name)          \
  STAP_PROBE8(gpuprof, activity, (unsigned)(kind), (unsigned long long)(correlation_id),       \
              (unsigned long long)(start), (unsigned long long)(end), (unsigned)(device),      \
              (unsigned)(stream), (unsigned long long)(bytes), (const char*)(name))
#define GPUPROF_DROPPED(count) STAP_PROBE1(gpuprof, dropped, (unsigned long long)(count))
