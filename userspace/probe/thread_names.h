// thread_names.h: the names of the target's threads, for the trace's tracks.
//
// The collector is told each event's thread as the events arrive and reads
// /proc/PID/task/TID/comm the first time it sees a thread. Consecutive
// events mostly come from one thread: that case costs one comparison. A
// thread that exited before its events were read has no /proc entry: a
// tracepoint on thread exit (bpf/thread_exits.bpf.c) hands over its name as
// it goes; poll() takes those. Without that program (it failed to load) such
// threads keep no name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "probe/bpf_program.h"
#include "record/recording.h"

struct thread_exits_bpf;

namespace gpuprof {

class ThreadNameCollector {
 public:
  explicit ThreadNameCollector(int pid);
  ~ThreadNameCollector();
  ThreadNameCollector(const ThreadNameCollector&) = delete;
  ThreadNameCollector& operator=(const ThreadNameCollector&) = delete;

  // Loads and attaches the exit tracepoint; fails if it cannot (the
  // collector still works from /proc).
  Result<void> watch_exits();
  // Takes the names of the threads that exited since the last call.
  void poll();

  void saw(uint32_t tid) {
    if (tid == last_tid_) return;
    last_tid_ = tid;
    if (!names_.contains(tid)) names_.emplace(tid, read_name(tid));
  }

  // The threads that had a readable name, by tid.
  std::vector<ThreadName> names() const;

 private:
  std::string read_name(uint32_t tid) const;

  int pid_;
  BpfProgram<thread_exits_bpf> exits_;
  bool watching_exits_ = false;
  uint32_t last_tid_ = 0;
  std::unordered_map<uint32_t, std::string> names_;  // "" when it could not be read
};

}  // namespace gpuprof
