// op_tracer.h: loads bpf/op_tracer.bpf.c and attaches it to one process.
//
// Lifecycle (libbpf-bootstrap style): open -> size the ring buffer -> load
// -> attach links. Links are uprobe_multi links filtered to the target pid;
// destroying the OpTracer (or gpuprof dying, even by SIGKILL) closes them
// and the kernel removes every breakpoint from the target.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dispatcher_catalog.h"
#include "events.h"
#include "uprobe_multi.h"

struct op_tracer_bpf;
struct ring_buffer;

namespace gpuprof {

class OpTracer {
 public:
  using EventSink = std::function<void(const gp_event&)>;

  // Loads the BPF program. Fails with a message that says what to do when
  // not root or when the kernel lacks BPF, BTF or ring buffers.
  static std::unique_ptr<OpTracer> load(uint32_t ring_buffer_bytes, EventSink sink, std::string* error);
  ~OpTracer();

  // One uprobe_multi link over every site of a libtorch_cpu. path must be
  // reachable from gpuprof's mount namespace (/proc/PID/root/...).
  bool attach_ops(const std::string& path, const ProbeSites& sites, int pid, std::string* error);

  // Entry probe on __cxa_begin_catch in the target's libstdc++ (see
  // GP_EV_CATCH). Optional: without it, unwound frames still end at the next
  // event of their thread, with a less precise end time.
  bool attach_catch(const std::string& libstdcxx_path, int pid, std::string* error);
  bool catch_attached() const { return catch_link_.has_value(); }

  // Gates event emission for every probe (see tracing_on in the BPF side).
  void set_tracing(bool on);

  // Removes every probe. Events already in the ring buffer stay readable.
  void detach();

  // fd to poll for readable events; consume() drains into the sink.
  int poll_fd() const;
  int consume();

  uint64_t events_lost() const;

 private:
  OpTracer() = default;
  op_tracer_bpf* skel_ = nullptr;
  ring_buffer* rb_ = nullptr;
  EventSink sink_;
  std::vector<UprobeMultiLink> op_links_;
  std::optional<UprobeMultiLink> catch_link_;
};

// libbpf prints nothing unless verbose (its warnings are for developers).
void set_libbpf_verbose(bool verbose);

}  // namespace gpuprof
