#include "op_tracer.h"

#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "elf_image.h"
#include "op_tracer.skel.h"

namespace gpuprof {
namespace {

bool g_libbpf_verbose = false;

int print_libbpf(enum libbpf_print_level level, const char* fmt, va_list args) {
  (void)level;
  if (!g_libbpf_verbose) return 0;
  return vfprintf(stderr, fmt, args);
}

int on_ring_event(void* ctx, void* data, size_t size) {
  if (size < sizeof(gp_event)) return 0;
  gp_event event;
  std::memcpy(&event, data, sizeof(event));
  (*static_cast<OpTracer::EventSink*>(ctx))(event);
  return 0;
}

std::string load_failure_hint(int err) {
  if (geteuid() != 0 || err == EPERM || err == EACCES)
    return "permission denied: gpuprof record needs root (CAP_BPF and CAP_PERFMON); run it with sudo";
  return std::string("cannot load the BPF programs: ") + std::strerror(err) +
         " (gpuprof needs a kernel with BPF, BTF and ring buffers, Linux 6.6 or later; "
         "run with -v for libbpf's log)";
}

}  // namespace

void set_libbpf_verbose(bool verbose) {
  g_libbpf_verbose = verbose;
  libbpf_set_print(print_libbpf);
}

std::unique_ptr<OpTracer> OpTracer::load(uint32_t ring_buffer_bytes, EventSink sink, std::string* error) {
  libbpf_set_print(print_libbpf);
  std::unique_ptr<OpTracer> tracer(new OpTracer());
  tracer->sink_ = std::move(sink);
  tracer->skel_ = op_tracer_bpf__open();
  if (!tracer->skel_) {
    *error = load_failure_hint(errno);
    return nullptr;
  }
  bpf_map__set_max_entries(tracer->skel_->maps.events, ring_buffer_bytes);
  tracer->skel_->rodata->wakeup_bytes = ring_buffer_bytes / 4;
  bpf_program__set_expected_attach_type(tracer->skel_->progs.on_op_probe,
                                        static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  if (int err = op_tracer_bpf__load(tracer->skel_); err != 0) {
    *error = load_failure_hint(-err);
    return nullptr;
  }
  tracer->rb_ = ring_buffer__new(bpf_map__fd(tracer->skel_->maps.events), on_ring_event,
                                 &tracer->sink_, nullptr);
  if (!tracer->rb_) {
    *error = std::string("cannot open the BPF ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  return tracer;
}

OpTracer::~OpTracer() {
  detach();
  if (rb_) ring_buffer__free(rb_);
  if (skel_) op_tracer_bpf__destroy(skel_);
}

bool OpTracer::attach_ops(const std::string& path, const ProbeSites& sites, int pid, std::string* error) {
  auto link = UprobeMultiLink::attach(bpf_program__fd(skel_->progs.on_op_probe), path, sites.offsets,
                                      sites.cookies, pid, error);
  if (!link) return false;
  op_links_.push_back(std::move(*link));
  return true;
}

bool OpTracer::attach_catch(const std::string& libstdcxx_path, int pid, std::string* error) {
  auto elf = ElfImage::open(libstdcxx_path, error);
  if (!elf) return false;
  std::optional<uint64_t> offset;
  elf->for_each_function([&](const ElfSymbol& sym) {
    if (!offset && sym.name == "__cxa_begin_catch") offset = elf->file_offset(sym.address);
  });
  if (!offset) {
    *error = libstdcxx_path + " has no __cxa_begin_catch";
    return false;
  }
  auto link = UprobeMultiLink::attach(bpf_program__fd(skel_->progs.on_op_probe), libstdcxx_path,
                                      {*offset}, {GP_COOKIE(GP_EV_CATCH, GP_NO_OP)}, pid, error);
  if (!link) return false;
  catch_link_ = std::move(*link);
  return true;
}

void OpTracer::set_tracing(bool on) {
  __atomic_store_n(&skel_->bss->tracing_on, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}

void OpTracer::detach() {
  set_tracing(false);
  op_links_.clear();
  catch_link_.reset();
}

int OpTracer::poll_fd() const { return ring_buffer__epoll_fd(rb_); }

int OpTracer::consume() { return ring_buffer__consume(rb_); }

uint64_t OpTracer::events_lost() const {
  return __atomic_load_n(&skel_->bss->events_lost, __ATOMIC_RELAXED);
}

}  // namespace gpuprof
