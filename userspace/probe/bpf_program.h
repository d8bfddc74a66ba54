// bpf_program.h: one BPF program's libbpf skeleton, owned, with its rings.
//
// Every loader in probe/ goes the same way (libbpf-bootstrap's): open the
// skeleton, size its maps and set its read-only data, load (the verifier
// runs), attach, read its ring buffers, read its lost-record counters,
// destroy it last. BpfProgram<Skel> does each step once for all of them,
// over the C++ members bpftool's `gen skeleton` puts in every skeleton
// (Skel::open, load, attach, destroy); what differs (map sizes, rodata,
// links of their own) stays in each loader, between the steps.
//
// Failures read "cannot STEP WHAT: <strerror>", WHAT naming the program
// ("the fork tracepoint program"), unless the loader words them itself.
#pragma once

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "probe/ring_reader.h"

namespace gpuprof {

// The message of a failed step ("open", "load", "attach") with err (an errno).
using BpfFailureMessage = std::string (*)(const char* step, const std::string& what, int err);

inline std::string describe_bpf_failure(const char* step, const std::string& what, int err) {
  return std::string("cannot ") + step + " " + what + ": " + std::strerror(err);
}

// A counter the BPF side bumps (a lost-record count in .bss), read as it is now.
template <typename T>
uint64_t read_bpf_counter(const T& counter) {
  return __atomic_load_n(&counter, __ATOMIC_RELAXED);
}

template <typename Skel>
class BpfProgram {
 public:
  explicit BpfProgram(std::string what, BpfFailureMessage describe = describe_bpf_failure)
      : what_(std::move(what)), describe_(describe) {}
  BpfProgram(const BpfProgram&) = delete;
  BpfProgram& operator=(const BpfProgram&) = delete;

  // Opens the object: its maps and rodata may be set until load().
  Result<void> open() {
    skel_.reset(Skel::open());
    if (!skel_) return Error(describe_("open", what_, errno));
    return {};
  }
  // Loads the programs (the verifier runs) and creates the maps.
  Result<void> load() {
    if (int err = Skel::load(skel_.get()); err != 0) return Error(describe_("load", what_, -err));
    return {};
  }
  Result<void> open_and_load() {
    RETURN_IF_ERROR(open());
    return load();
  }
  // Attaches the programs whose section names say where (tracepoints).
  Result<void> attach() {
    if (int err = Skel::attach(skel_.get()); err != 0) return Error(describe_("attach", what_, -err));
    return {};
  }

  // After load(): reads `map`, records in place (RingReader::add).
  Result<void> read_ring(bpf_map* map, RingReader::ReadInPlace read, void* ctx, const char* what) {
    return rings_.add(bpf_map__fd(map), read, ctx, what);
  }
  // ... or copied into Records.
  template <typename Record>
  Result<void> read_ring(bpf_map* map, std::function<void(const Record&)> on_record, const char* what) {
    return rings_.add<Record>(bpf_map__fd(map), std::move(on_record), what);
  }
  int poll_fd() const { return rings_.poll_fd(); }
  int consume() { return rings_.consume(); }

  // The skeleton: its maps, progs, bss and rodata (after open()).
  Skel* operator->() const { return skel_.get(); }
  explicit operator bool() const { return skel_ != nullptr; }

 private:
  struct Destroy {
    void operator()(Skel* skel) const { Skel::destroy(skel); }
  };
  std::string what_;
  BpfFailureMessage describe_;
  std::unique_ptr<Skel, Destroy> skel_;
  RingReader rings_;  // declared after skel_: freed before the maps it reads
};

}  // namespace gpuprof
