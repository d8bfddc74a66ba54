#include "probe/op_tracer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string_view>
#include <algorithm>

#include "op_tracer.skel.h"
#include "symbols/elf_image.h"

namespace gpuprof {
namespace {

bool g_libbpf_verbose = false;

int print_libbpf(enum libbpf_print_level level, const char* fmt, va_list args) {
  (void)level;
  if (!g_libbpf_verbose) return 0;
  return vfprintf(stderr, fmt, args);
}

}  // namespace

// The payload is copied out of the ring (the sink may keep it) and split:
// the Python stack first when stacks are on, then the shape slots.
int OpTracer::on_op_record(void* ctx, void* data, size_t size) {
  auto* self = static_cast<OpTracer*>(ctx);
  if (size < sizeof(gp_event)) return 0;
  gp_event event;
  std::memcpy(&event, data, sizeof(event));
  size_t payload_words = std::min<size_t>(event.payload_bytes, size - sizeof(event)) / 8;
  uint64_t words[1 + GP_MAX_PY_FRAMES * GP_ENTRY_FRAME_WORDS +
                 GP_MAX_TENSOR_ARGS * (1 + GP_RAW_WINDOW_WORDS)];
  payload_words = std::min(payload_words, std::size(words));
  std::memcpy(words, static_cast<const char*>(data) + sizeof(event), payload_words * 8);
  event.payload_bytes = 0;
  EntryPayload payload;
  std::span<const uint64_t> rest(words, payload_words);
  if (self->stacks_on_ && !rest.empty()) {
    const size_t depth = std::min<uint64_t>(rest[0] & 0xffffffffu, GP_MAX_PY_FRAMES);
    const size_t stack_words = std::min(rest.size() - 1, depth * GP_ENTRY_FRAME_WORDS);
    payload.has_stack = true;
    payload.stack_not_read = static_cast<uint32_t>(rest[0] >> 32);
    payload.stack_words = rest.subspan(1, stack_words - stack_words % GP_ENTRY_FRAME_WORDS);
    rest = rest.subspan(1 + stack_words);
  }
  payload.words = rest;
  self->sinks_.op(event, payload);
  return 0;
}

namespace {

int on_mem_record(void* ctx, void* data, size_t size) {
  if (size < sizeof(gp_mem_event)) return 0;
  gp_mem_event event;
  std::memcpy(&event, data, sizeof(event));
  auto& sink = static_cast<TracerSinks*>(ctx)->memory;
  if (sink) sink(event);
  return 0;
}

// libc10's accounting entry points; their signatures are stable from 1.13 to
// 2.x (reportMemoryUsageToProfiler's size_t totals mangle as l or m).
struct MemoryProbe {
  const char* symbol_prefix;
  gp_mem_kind kind;
};
constexpr MemoryProbe kMemoryProbes[] = {
    {"_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm", GP_MEM_CPU_ALLOC},
    {"_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv", GP_MEM_CPU_FREE},
    {"_ZN3c1027reportMemoryUsageToProfilerEPvl", GP_MEM_DEVICE},
};

// The op tracer is the first program a session loads: its failures say
// what gpuprof needs.
std::string load_failure_hint(const char* step, const std::string& what, int err) {
  (void)step;
  (void)what;
  if (err == EPERM || err == EACCES)
    return "permission denied loading the BPF programs: gpuprof needs root, or CAP_BPF and CAP_PERFMON "
           "(sudo, or setcap cap_bpf,cap_perfmon+ep on the binary: docs/privileges.md)";
  return std::string("cannot load the BPF programs: ") + std::strerror(err) +
         " (gpuprof needs a kernel with BPF, BTF and ring buffers, Linux 6.6 or later; "
         "run with -v for libbpf's log)";
}

}  // namespace

void set_libbpf_verbose(bool verbose) {
  g_libbpf_verbose = verbose;
  libbpf_set_print(print_libbpf);
}

OpTracer::OpTracer(TracerSinks sinks) : bpf_("the BPF programs", load_failure_hint), sinks_(std::move(sinks)) {}

Result<std::unique_ptr<OpTracer>> OpTracer::load(const TracerConfig& config, TracerSinks sinks) {
  libbpf_set_print(print_libbpf);
  std::unique_ptr<OpTracer> tracer(new OpTracer(std::move(sinks)));
  BpfProgram<op_tracer_bpf>& bpf = tracer->bpf_;
  RETURN_IF_ERROR(bpf.open());
  bpf_map__set_max_entries(bpf->maps.events, config.ring_buffer_bytes);
  bpf_map__set_max_entries(bpf->maps.mem_events, config.mem_ring_buffer_bytes);
  bpf->rodata->wakeup_bytes = config.ring_buffer_bytes / 4;
  tracer->ring_buffer_bytes_ = config.ring_buffer_bytes;
  expect_uprobe_multi(bpf->progs.on_op_probe);
  expect_uprobe_multi(bpf->progs.on_memory_probe);
  RETURN_IF_ERROR(bpf.load());
  RETURN_IF_ERROR(bpf.read_ring(bpf->maps.events, on_op_record, tracer.get(), "BPF"));
  RETURN_IF_ERROR(bpf.read_ring(bpf->maps.mem_events, on_mem_record, &tracer->sinks_, "BPF"));
  return tracer;
}

OpTracer::~OpTracer() { detach(); }

Result<void> OpTracer::attach_ops(const std::string& path, const ProbeSites& sites, int pid) {
  return UprobeMultiLink::attach_into(op_links_, bpf_->progs.on_op_probe, path, sites.offsets, sites.cookies, pid);
}

Result<void> OpTracer::attach_catch(const std::string& libstdcxx_path, int pid) {
  ASSIGN_OR_RETURN(ElfImage elf, ElfImage::open(libstdcxx_path));
  std::optional<uint64_t> offset;
  elf.for_each_function([&](const ElfSymbol& sym) {
    if (!offset && sym.name == "__cxa_begin_catch") offset = elf.file_offset(sym.address);
  });
  if (!offset) return Error(libstdcxx_path + " has no __cxa_begin_catch");
  ASSIGN_OR_RETURN(catch_link_, UprobeMultiLink::attach(bpf_->progs.on_op_probe, libstdcxx_path,
                                                        {*offset}, {GP_COOKIE(GP_EV_CATCH, GP_NO_OP)}, pid));
  return {};
}

Result<void> OpTracer::attach_memory(const std::string& libc10_path, int pid) {
  ASSIGN_OR_RETURN(ElfImage elf, ElfImage::open(libc10_path));
  std::vector<uint64_t> offsets, cookies;
  for (const MemoryProbe& probe : kMemoryProbes) {
    std::optional<uint64_t> offset;
    elf.for_each_function([&](const ElfSymbol& sym) {
      if (!offset && std::string_view(sym.name).starts_with(probe.symbol_prefix))
        offset = elf.file_offset(sym.address);
    });
    if (!offset)
      return Error(libc10_path + " has no " + probe.symbol_prefix +
                   "...: this libc10 is not one gpuprof knows how to read memory from");
    offsets.push_back(*offset);
    cookies.push_back(probe.kind);
  }
  ASSIGN_OR_RETURN(memory_link_, UprobeMultiLink::attach(bpf_->progs.on_memory_probe, libc10_path,
                                                         offsets, cookies, pid));
  return {};
}

Result<void> OpTracer::set_shape_plans(std::span<const gp_shape_plan> plans) {
  if (plans.size() > GP_MAX_SHAPE_PLANS) plans = plans.first(GP_MAX_SHAPE_PLANS);
  int fd = bpf_map__fd(bpf_->maps.shape_plans);
  for (uint32_t op = 0; op < plans.size(); op++) {
    if (plans[op].count == 0) continue;
    if (bpf_map_update_elem(fd, &op, &plans[op], BPF_ANY) != 0)
      return Error(std::string("cannot store the shape plans: ") + std::strerror(errno));
  }
  return {};
}

void OpTracer::set_shapes(bool on) {
  const int64_t raw_bytes = on ? ring_buffer_bytes_ / 4 : 0;
  __atomic_store_n(&bpf_->bss->raw_bytes_left, raw_bytes, __ATOMIC_SEQ_CST);
  __atomic_store_n(&bpf_->bss->shapes_on, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}

void OpTracer::set_tensor_layout(const gp_tensor_layout& layout) {
  bpf_->bss->tensor_layout = layout;
  __atomic_store_n(&bpf_->bss->tensor_layout_ready, 1u, __ATOMIC_SEQ_CST);
}

void OpTracer::set_undefined_tensor_impl(uint64_t address) {
  __atomic_store_n(&bpf_->bss->undefined_tensor_impl, address, __ATOMIC_SEQ_CST);
}

void OpTracer::set_python_stacks(const gp_python_config& config) {
  bpf_->bss->python = config;
  stacks_on_ = true;
  __atomic_store_n(&bpf_->bss->stacks_on, 1u, __ATOMIC_SEQ_CST);
}

void OpTracer::set_python_stacks_per_process() {
  stacks_on_ = true;
  __atomic_store_n(&bpf_->bss->stacks_on, 1u, __ATOMIC_SEQ_CST);
}

bool OpTracer::set_process_python(uint32_t pid, const gp_python_config& config) {
  return bpf_map_update_elem(bpf_map__fd(bpf_->maps.python_of_process), &pid, &config, BPF_ANY) == 0;
}

void OpTracer::forget_process_python(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(bpf_->maps.python_of_process), &pid);
}

void OpTracer::set_schedule(const gp_schedule& schedule) {
  bpf_->bss->steps_started = 0;
  bpf_->bss->step_recorded = 0;
  bpf_->bss->schedule = schedule;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void OpTracer::set_tracing(bool on) {
  __atomic_store_n(&bpf_->bss->tracing_on, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}

void OpTracer::detach() {
  set_tracing(false);
  op_links_.clear();
  catch_link_.reset();
  memory_link_.reset();
}

uint64_t OpTracer::events_lost() const { return read_bpf_counter(bpf_->bss->events_lost); }

uint64_t OpTracer::mem_events_lost() const { return read_bpf_counter(bpf_->bss->mem_events_lost); }

}  // namespace gpuprof
