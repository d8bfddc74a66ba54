// cupti_driver.cpp: plays the CUDA driver for the CUPTI shim, over the
// stand-in libcupti.so.13 (fake_cupti.cpp), with no GPU.
//
// Usage: cupti_driver [--check=STATE] [--probes-on] [--no-final-deliver] SHIM STEPS [READY_FILE GO_FILE]
//        cupti_driver --scenario=NAME SHIM STEPS
//
// dlopens SHIM and calls its InitializeInjection as cuInit does, then runs
// STEPS steps of known CUPTI traffic through the stand-in. Per step:
//   3 x cudaLaunchKernel (211)   "void k::scale<float>(float*, int)"   1000 ns
//   1 x cudaLaunchKernelExC (430) "k::reduce(float const*, float*)"    5000 ns
//   1 x cudaMemcpyAsync: memcpy 4096 bytes HtoD 300 ns
//   1 x cudaMemsetAsync: memset 1024 bytes 200 ns
//   1 x cudaGraphLaunch (311): kernels "k::graph_a()" 700 ns, "k::graph_b()" 800 ns (stream 9)
//   1 x cuLaunchKernel (307)      "triton_poi_fused_add_0"             2000 ns
//   1 x cudaLaunchKernel (211) calling cuLaunchKernel (307) inside: "k::bias_add(float*)" 1500 ns
//   then the records are delivered (fake_cupti_deliver); before the last
//   delivery the stand-in drops 3 records.
// Device 0, stream 7 unless said. With a tracer attached the shim fires, per
// step, 7 gpuprof:launch (the nested driver call is not repeated) and 10
// gpuprof:activity; and gpuprof:dropped(3) once.
//
// With READY_FILE it writes its pid there and waits for GO_FILE before the
// steps, so that a tracer can attach first.
//
// --check=STATE checks what the shim did in InitializeInjection:
// gpuprof_cupti_state == STATE, its one stderr line, and through the
// stand-in the callbacks and activity kinds it enabled and in which order
// (6, dormant: none, and no CUPTI call at all). --probes-on raises the
// shim's USDT semaphores itself (found through its stapsdt note, as the
// kernel does for a tracer) before InitializeInjection, as when gpuprof
// record -- CMD attached at the shim's mapping: the shim switches CUPTI on
// at once and its probe paths run without a tracer. Prints PASS/FAIL lines;
// exits 1 on any FAIL.
//
// --scenario=NAME plays tracers coming and going (the semaphores raised and
// dropped as the kernel does at attach and detach) and the job's own
// torch.profiler (job_profiler.h), and checks through the stand-in's call
// log exactly what the shim switched, with STEPS steps per phase:
//   attach-cycle              untraced: no CUPTI call; attach: on; detach:
//                             flushed and off; attach again: on; detach: off
//   profiler-while-dormant    Kineto profiles while no tracer is attached:
//                             all its records, no call of the shim's; it
//                             keeps CUPTI, so a tracer attaching after gets
//                             state 3 and touches nothing of the job's
//   profiler-while-tracing    Kineto's first profile starts while the shim
//                             is on: its cuptiSubscribe reaches the shim,
//                             which gives CUPTI up (state 7); the job's
//                             profile is whole, through a detach too
//   profiler-v2-while-tracing the same, the job calling cuptiSubscribe_v2
//   profiler-loaded-while-tracing
//                             Kineto's library (libjob_profiler.so) loaded
//                             while the shim is on: heard all the same
//   profiler-with-teardown    Kineto with TEARDOWN_CUPTI=1: CUPTI given up at
//                             each profile's start, taken again at its end
//   activities-only-while-tracing
//                             a profiler without a subscription (the shim
//                             cannot hear it) starts while the shim is on:
//                             its buffers win, gpuprof gets none until its
//                             next attach
//   activities-only-spans-detach
//                             the tracer detaches in the middle of that
//                             profile: the shim leaves the job's kinds on
//                             and the profile goes on whole
//   tracer-while-profiling    a tracer attaches while Kineto (TEARDOWN_CUPTI=1)
//                             profiles: the shim touches nothing of the
//                             job's (state 3) and switches on once the
//                             job's profiler has given CUPTI back
// --no-final-deliver leaves the last step's records queued: only the shim's
// flush at exit (while a tracer listens) delivers them.
#include <dlfcn.h>
#include <time.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <cupti.h>

#include "fake_cupti_hooks.h"
#include "job_profiler.h"

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

// Runs fn with stderr going into a pipe; returns what was written (and
// passes it on to the real stderr).
template <typename F>
std::string capture_stderr(F fn) {
  std::fflush(stderr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    fn();
    return "";
  }
  const int saved = dup(2);
  dup2(pipe_fds[1], 2);
  close(pipe_fds[1]);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof(buf))) > 0;) text.append(buf, size_t(n));
  close(pipe_fds[0]);
  std::fputs(text.c_str(), stderr);
  return text;
}

size_t count_lines(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(prefix, at)) != std::string::npos; at += prefix.size())
    if (at == 0 || text[at - 1] == '\n') ++n;
  return n;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The shim's stapsdt notes give each probe's semaphore address (a link-time
// address; add the load bias): its distinct semaphores.
std::vector<volatile unsigned short*> find_semaphores(void* shim) {
  std::vector<volatile unsigned short*> found;
  link_map* map = nullptr;
  if (dlinfo(shim, RTLD_DI_LINKMAP, &map) != 0 || !map) return found;
  const int fd = open(map->l_name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return found;
  struct stat st;
  fstat(fd, &st);
  void* file = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (file == MAP_FAILED) return found;
  const auto* base = static_cast<const uint8_t*>(file);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  const char* names = reinterpret_cast<const char*>(base + sections[eh->e_shstrndx].sh_offset);
  std::set<uint64_t> seen;
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (std::strcmp(names + sections[i].sh_name, ".note.stapsdt") != 0) continue;
    for (uint64_t at = sections[i].sh_offset; at + sizeof(Elf64_Nhdr) <= sections[i].sh_offset + sections[i].sh_size;) {
      const auto* note = reinterpret_cast<const Elf64_Nhdr*>(base + at);
      const uint8_t* desc = base + at + sizeof(Elf64_Nhdr) + ((note->n_namesz + 3) & ~3u);
      uint64_t addrs[3];  // probe pc, .stapsdt.base, semaphore
      std::memcpy(addrs, desc, sizeof(addrs));
      if (note->n_type == 3 && addrs[2] && seen.insert(addrs[2]).second)
        found.push_back(reinterpret_cast<volatile unsigned short*>(map->l_addr + addrs[2]));
      at += sizeof(Elf64_Nhdr) + ((note->n_namesz + 3) & ~3u) + ((note->n_descsz + 3) & ~3u);
    }
  }
  munmap(file, size_t(st.st_size));
  return found;
}

// As the kernel does when a tracer attaches its uprobes (+1 on each
// semaphore) or detaches them (-1).
void move_semaphores(const std::vector<volatile unsigned short*>& semaphores, int by) {
  for (volatile unsigned short* semaphore : semaphores) *semaphore = static_cast<unsigned short>(*semaphore + by);
}

void check_initialization(int expected, int state, const std::string& log) {
  check(state == expected, "gpuprof_cupti_state == " + std::to_string(expected) + " (is " + std::to_string(state) + ")");
  const bool has_flush_period = dlsym(RTLD_DEFAULT, "cuptiActivityFlushPeriod") != nullptr;
  const size_t lines = count_lines(log, "gpuprof-cupti: ");
  const size_t expected_lines = expected == 1 && !has_flush_period ? 2 : 1;
  check(lines == expected_lines, "stderr has " + std::to_string(expected_lines) + " gpuprof-cupti line(s) (has " +
                                     std::to_string(lines) + ")");
  const std::string calls = fake_cupti_call_log();
  switch (expected) {
    case 1: {
      // Records are stamped on CLOCK_MONOTONIC, bpf_ktime_get_ns()'s clock
      // (CUPTI's default, CLOCK_REALTIME, is decades away from it).
      timespec mono;
      clock_gettime(CLOCK_MONOTONIC, &mono);
      const uint64_t now = uint64_t(mono.tv_sec) * 1'000'000'000u + uint64_t(mono.tv_nsec);
      const uint64_t stamped = fake_cupti_now_ns();
      check(stamped >= now && stamped - now < 1'000'000'000u, "records are stamped on CLOCK_MONOTONIC");
      check(contains(log, "gpuprof-cupti: tracing kernels, memcpy and memset (libcupti: ") &&
                contains(log, "libcupti.so.13)\n"),
            "success line names the libcupti");
      const std::set<std::pair<uint32_t, uint32_t>> want = {
          {2, 211}, {2, 214}, {2, 430}, {2, 431}, {2, 311}, {2, 312},
          {2, 31},  {2, 215}, {2, 41},  {2, 225}, {2, 49},  {2, 233}, {2, 51}, {2, 235},
          {1, 307}, {1, 442}, {1, 652}, {1, 653}, {1, 514}, {1, 515}};
      uint32_t domains[64], cbids[64];
      const size_t n = fake_cupti_enabled_callbacks(domains, cbids, 64);
      std::set<std::pair<uint32_t, uint32_t>> got;
      for (size_t i = 0; i < n && i < 64; ++i) got.insert({domains[i], cbids[i]});
      check(n == want.size() && got == want, "enabled (domain, cbid) set is exactly the 12 launch APIs");
      check(fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
                fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMCPY) &&
                fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMSET) &&
                !fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_KERNEL),
            "activity kinds CONCURRENT_KERNEL, MEMCPY, MEMSET enabled (and not KERNEL)");
      const size_t timestamp = calls.find("cuptiActivityRegisterTimestampCallback");
      const size_t first_enable = calls.find("cuptiActivityEnable(");
      check(timestamp != std::string::npos && first_enable != std::string::npos && timestamp < first_enable,
            "timestamp callback registered before the first cuptiActivityEnable");
      check(calls.find("cuptiSubscribe") < calls.find("cuptiEnableCallback"), "subscribed before enabling callbacks");
      if (has_flush_period)
        check(fake_cupti_flush_period_ms() == 100, "flush period 100 ms");
      else
        check(contains(log, "has no cuptiActivityFlushPeriod"), "a libcupti without cuptiActivityFlushPeriod is said");
      check(fake_cupti_subscribed() == 1, "subscribed");
      break;
    }
    case 2:
      check(contains(log, "gpuprof-cupti: disabled by GPUPROF_CUPTI=0"), "log says disabled");
      check(calls.empty(), "no CUPTI call at all");
      break;
    case 3:
      check(contains(log, "gpuprof-cupti: CUPTI is taken by another subscriber (torch.profiler?): no GPU kernel "
                          "times from gpuprof\n"),
            "log says CUPTI is taken");
      check(!contains(calls, "cuptiActivity"), "the other subscriber's activity setup left alone");
      break;
    case 4:
      check(contains(log, "gpuprof-cupti: libcupti") && (contains(log, "not found") || contains(log, "has no")),
            "log says libcupti is missing or lacks a function");
      break;
    case 5:
      check(contains(log, "failed: CUPTI_ERROR_UNKNOWN (999)"), "log names the CUPTI error");
      check(fake_cupti_subscribed() == 0, "CUPTI given back (unsubscribed)");
      check(!fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "no activity kind left enabled");
      break;
    case 6:
      check(contains(log, "gpuprof-cupti: dormant until gpuprof attaches (libcupti: ") &&
                contains(log, "libcupti.so.13)\n"),
            "log says dormant and names the libcupti");
      check(calls.empty(), "no CUPTI call at all (is: " + calls + ")");
      break;
  }
  if (expected != 1) check(fake_cupti_subscribed() == 0, "not subscribed");
}

struct Counts {
  uint64_t first_id = 0, last_id = 0, kernels = 0, memcpys = 0, memsets = 0, launch_probes = 0, activity_probes = 0;
};

void run_step(Counts& c, bool last, bool deliver) {
  constexpr uint32_t rt = CUPTI_CB_DOMAIN_RUNTIME_API;
  constexpr uint32_t drv = CUPTI_CB_DOMAIN_DRIVER_API;
  auto note = [&](uint64_t id) {
    if (!c.first_id) c.first_id = id;
    c.last_id = id;
  };
  for (int i = 0; i < 3; ++i)
    note(fake_cupti_launch(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "void k::scale<float>(float*, int)",
                           1000, 0, 7));
  note(fake_cupti_launch(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "k::reduce(float const*, float*)",
                         5000, 0, 7));
  uint64_t id = fake_cupti_launch(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, nullptr, 0, 0, 7);
  note(id);
  fake_cupti_memcpy(id, 4096, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 300, 0, 7);
  id = fake_cupti_launch(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, nullptr, 0, 0, 7);
  note(id);
  fake_cupti_memset(id, 1024, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 200, 0, 7);
  id = fake_cupti_launch(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, nullptr, 0, 0, 9);
  note(id);
  fake_cupti_graph_kernel(id, "k::graph_a()", 700, 0, 9);
  fake_cupti_graph_kernel(id, "k::graph_b()", 800, 0, 9);
  note(fake_cupti_launch(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "triton_poi_fused_add_0", 2000, 0, 7));
  note(fake_cupti_launch_nested(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                "k::bias_add(float*)", 1500, 0, 7));
  c.kernels += 8;
  c.memcpys += 1;
  c.memsets += 1;
  c.launch_probes += 7;
  c.activity_probes += 10;
  if (last) fake_cupti_drop(3);
  if (deliver) fake_cupti_deliver();
}


// What the shim calls to switch CUPTI on (gpuprof_cupti.cpp, kLaunchCallbacks
// and kActivityKinds, in that order) and off, as the stand-in logs them.
std::string switch_on_calls() {
  const std::pair<uint32_t, uint32_t> callbacks[] = {
      {2, 211}, {2, 214}, {2, 430}, {2, 431}, {2, 311}, {2, 312}, {2, 31}, {2, 215}, {2, 41}, {2, 225},
      {2, 49},  {2, 233}, {2, 51},  {2, 235}, {1, 307}, {1, 442}, {1, 652}, {1, 653}, {1, 514}, {1, 515}};
  std::string calls = "cuptiSubscribe";
  for (const auto& [domain, cbid] : callbacks)
    calls += " cuptiEnableCallback(1," + std::to_string(domain) + "," + std::to_string(cbid) + ")";
  return calls + " cuptiActivityRegisterTimestampCallback cuptiActivityRegisterCallbacks cuptiActivityEnable(10) "
                 "cuptiActivityEnable(1) cuptiActivityEnable(2) cuptiActivityFlushPeriod(100)";
}
// The first flush also asks whether the records still come to the shim.
const std::string kSwitchOffCalls = "cuptiActivityFlushAll(0) cuptiActivityDisable(10) cuptiActivityDisable(1) "
                                    "cuptiActivityDisable(2) cuptiActivityFlushAll(1) cuptiUnsubscribe";
// The records went to the job's profiler: it flushed twice (100 ms apart)
// to be sure, leaves the kinds as they are, and only unsubscribes.
const std::string kSwitchOffLeavingKindsCalls = "cuptiActivityFlushAll(0) cuptiActivityFlushAll(0) cuptiUnsubscribe";
// JobProfiler's calls around one profile; a Kineto-like one subscribes
// before its first.
const std::string kProfileStartCalls =
    "cuptiActivityRegisterCallbacks cuptiActivityEnable(10) cuptiActivityEnable(1) cuptiActivityEnable(2)";
const std::string kJobStartCalls = "cuptiSubscribe " + kProfileStartCalls;
const std::string kJobStopCalls = "cuptiActivityFlushAll(0) cuptiActivityDisable(10) cuptiActivityDisable(1) "
                                  "cuptiActivityDisable(2)";

// Polls gpuprof_cupti_state until it is `want` (the watcher looks every
// 50 ms; a busy machine may be slow).
bool wait_for_state(volatile int* state, int want, int timeout_ms = 5000) {
  for (int waited = 0; waited < timeout_ms; waited += 2) {
    if (*state == want) return true;
    usleep(2000);
  }
  return *state == want;
}

// Long enough for the watcher to look several times.
void let_the_watcher_look() { usleep(300 * 1000); }

bool nothing_on() {
  uint32_t domains[1], cbids[1];
  return !fake_cupti_subscribed() && fake_cupti_enabled_callbacks(domains, cbids, 1) == 0 &&
         !fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
         !fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMCPY) &&
         !fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMSET);
}

bool all_on() {
  uint32_t domains[64], cbids[64];
  return fake_cupti_subscribed() && fake_cupti_enabled_callbacks(domains, cbids, 64) == 20 &&
         fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
         fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMCPY) &&
         fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMSET);
}

// The records each reader has walked since the last call: the job's
// profiler counts its own; the rest of the stand-in's count are the shim's.
struct Readers {
  uint64_t job = 0, shim = 0;
};
Readers walked_since(Readers& last) {
  const uint64_t job = JobProfiler::records(), all = fake_cupti_records_walked();
  Readers now{job - last.job, (all - job) - last.shim};
  last = {job, all - job};
  return now;
}

struct Scenario {
  volatile int* state;
  std::vector<volatile unsigned short*> semaphores;
  int steps;
  Counts counts;
  Readers walked;

  void attach(const std::string& phase) {
    fake_cupti_clear_call_log();
    move_semaphores(semaphores, +1);
    const bool switched = wait_for_state(state, 1);
    check(switched, phase + ": state 1 (tracing) after the attach (is " + std::to_string(*state) + ")");
    check(fake_cupti_call_log() == switch_on_calls(), phase + ": the shim switched everything on, in order (log: " +
                                                          std::string(fake_cupti_call_log()) + ")");
    check(all_on(), phase + ": subscribed, 20 launch callbacks and 3 activity kinds on");
  }
  void detach(const std::string& phase, const std::string& calls = kSwitchOffCalls) {
    fake_cupti_clear_call_log();
    move_semaphores(semaphores, -1);
    const bool switched = wait_for_state(state, 6);
    check(switched, phase + ": state 6 (dormant) after the detach (is " + std::to_string(*state) + ")");
    check(fake_cupti_call_log() == calls,
          phase + ": switched off with exactly: " + calls + " (log: " + std::string(fake_cupti_call_log()) + ")");
    if (calls == kSwitchOffCalls) check(nothing_on(), phase + ": nothing left on");
  }
  // STEPS steps, records delivered: how many each reader walked.
  Readers run(bool deliver = true) {
    for (int i = 0; i < steps; ++i) run_step(counts, false, deliver);
    return walked_since(walked);
  }
  uint64_t records() const { return uint64_t(steps) * 10; }
  // While no tracer is attached: the shim calls nothing however long it
  // waits and whatever the job launches, and walks no record.
  void untraced(const std::string& phase) {
    fake_cupti_clear_call_log();
    let_the_watcher_look();
    const Readers got = run();
    let_the_watcher_look();
    check(*state == 6, phase + ": state 6 (dormant)");
    check(std::string(fake_cupti_call_log()).empty(),
          phase + ": no CUPTI call at all (log: " + std::string(fake_cupti_call_log()) + ")");
    check(nothing_on(), phase + ": no subscriber, no callback, no activity kind");
    check(got.shim == 0 && got.job == 0, phase + ": no record made or walked");
  }
};

void attach_cycle(Scenario& s) {
  s.untraced("untraced");
  for (const char* round : {"first", "second"}) {
    const std::string attach = std::string(round) + " attach", detach = std::string(round) + " detach";
    s.attach(attach);
    Readers got = s.run();
    check(got.shim == s.records() && got.job == 0, attach + ": the shim walked all " + std::to_string(s.records()) +
                                                       " records (walked " + std::to_string(got.shim) + ")");
    // Records still in CUPTI's buffers at the detach: flushed by the
    // switch off, and freed unread (no tracer listens any more).
    s.run(/*deliver=*/false);
    check(fake_cupti_queued_records() == s.records(), attach + ": " + std::to_string(s.records()) +
                                                           " records left in CUPTI's buffers");
    s.detach(detach);
    got = walked_since(s.walked);
    check(fake_cupti_queued_records() == 0 && got.shim == 0,
          detach + ": the records left were flushed at the detach, and freed unread");
    s.untraced(detach + ", then untraced");
  }
}

// Whether every call in the log is `name` (and there is one at least).
bool only_calls_to(const std::string& calls, const std::string& name) {
  bool only = !calls.empty();
  for (size_t at = 0; at < calls.size();) {
    const size_t end = std::min(calls.find(' ', at), calls.size());
    only = only && calls.compare(at, end - at, name) == 0;
    at = end + 1;
  }
  return only;
}

// The log without the calls to `name` (the watcher's asking again, which
// may come between any two of the job's calls).
std::string without_calls_to(const std::string& calls, const std::string& name) {
  std::string kept;
  for (size_t at = 0; at < calls.size();) {
    const size_t end = std::min(calls.find(' ', at), calls.size());
    if (calls.compare(at, end - at, name) != 0) kept += (kept.empty() ? "" : " ") + calls.substr(at, end - at);
    at = end + 1;
  }
  return kept;
}

// The watcher asks for CUPTI once a second (20 looks) while it is another's.
void let_the_watcher_ask_again() { usleep(1600 * 1000); }

// Kineto profiles while no tracer is attached, and keeps CUPTI after: a
// tracer that comes later gets none of it, and touches nothing of the job's.
void profiler_while_dormant(Scenario& s) {
  JobProfiler job;
  fake_cupti_clear_call_log();
  job.start();
  check(job.subscribed(), "the job's profiler subscribed: the dormant shim holds nothing");
  Readers got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's profiler got all " + std::to_string(s.records()) +
                                                     " records (got " + std::to_string(got.job) + ")");
  job.stop();
  check(fake_cupti_call_log() == kJobStartCalls + " " + kJobStopCalls,
        "only the job's profiler called CUPTI (log: " + std::string(fake_cupti_call_log()) + ")");
  check(*s.state == 6, "the shim stayed dormant");
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, +1);
  check(wait_for_state(s.state, 3), "a tracer attaches after the job's profile: state 3 (Kineto keeps CUPTI)");
  job.start();
  got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's second profile got all records");
  job.stop();
  let_the_watcher_ask_again();
  const std::string calls = fake_cupti_call_log();
  check(calls.find("cuptiSubscribe") != std::string::npos &&
            without_calls_to(calls, "cuptiSubscribe") == kProfileStartCalls + " " + kJobStopCalls,
        "the shim only asked for CUPTI: the job's profile untouched (log: " + calls + ")");
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, -1);
  check(wait_for_state(s.state, 6), "detached: state 6 (dormant)");
  check(std::string(fake_cupti_call_log()).empty(), "detached: no CUPTI call (log: " +
                                                        std::string(fake_cupti_call_log()) + ")");
}

// The bug this guards against: Kineto's first profile starting while the
// shim traces. Its cuptiSubscribe reaches the shim (import_redirect.h),
// which flushes its records to the tracer, lets CUPTI go and has the
// subscription made for the job: the job's profile is whole, the tracer
// gets the records made before the job asked, and nothing of the job's is
// touched after, through the tracer's detach and a new attach.
void profiler_while_tracing(Scenario& s, JobProfiler::Kind kind) {
  const std::string subscribe = kind == JobProfiler::Kind::kineto_v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe";
  s.attach("attach");
  Readers got = s.run();
  check(got.shim == s.records() && got.job == 0, "before the job's profile the shim walked all records");
  s.run(/*deliver=*/false);  // in CUPTI's buffers when the job asks
  JobProfiler job(kind);
  fake_cupti_clear_call_log();
  job.start();
  check(job.subscribed() && !job.cpu_only(), "the job's " + subscribe + " got CUPTI: the shim gave it up");
  const std::string expected = subscribe + " " + kSwitchOffCalls + " " + subscribe + " " + kProfileStartCalls;
  check(fake_cupti_call_log() == expected, "the job asked, the shim switched off, CUPTI said yes: exactly " +
                                               expected + " (log: " + std::string(fake_cupti_call_log()) + ")");
  check(*s.state == 7, "state 7 (given up to the job's profiler; is " + std::to_string(*s.state) + ")");
  check(nothing_on() == false && fake_cupti_subscribed(), "subscribed: the job");
  got = walked_since(s.walked);
  check(got.shim == s.records() && got.job == 0,
        "the records in CUPTI's buffers when the job asked went to the tracer (shim " + std::to_string(got.shim) +
            ", job " + std::to_string(got.job) + ")");
  got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's profile got every record (job " +
                                                     std::to_string(got.job) + ", shim " + std::to_string(got.shim) + ")");
  fake_cupti_clear_call_log();
  let_the_watcher_ask_again();
  check(*s.state == 7 && only_calls_to(fake_cupti_call_log(), "cuptiSubscribe"),
        "Kineto keeps CUPTI: the watcher only asked again, and still says state 7 (log: " +
            std::string(fake_cupti_call_log()) + ")");
  // The tracer leaves in the middle of the job's profile.
  s.run(/*deliver=*/false);
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, -1);
  check(wait_for_state(s.state, 6), "detached during the job's profile: state 6");
  check(std::string(fake_cupti_call_log()).empty(),
        "detached: no CUPTI call (log: " + std::string(fake_cupti_call_log()) + ")");
  got = s.run();
  check(got.job == 2 * s.records() && got.shim == 0, "the job's profile went on whole through the detach");
  job.stop();
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, +1);
  check(wait_for_state(s.state, 3), "attached again: state 3 (taken: Kineto kept CUPTI)");
  check(only_calls_to(fake_cupti_call_log(), "cuptiSubscribe"), "attached again: the shim only asked for CUPTI");
  got = s.run();
  check(got.job == 0 && got.shim == 0, "no profile, no kinds on: no records for anyone");
  move_semaphores(s.semaphores, -1);
  check(wait_for_state(s.state, 6), "detached again: state 6");
}

// Kineto with TEARDOWN_CUPTI=1 gives CUPTI back after each profile: the
// shim gives it up at each profile's start and takes it again after.
void profiler_with_teardown(Scenario& s) {
  s.attach("attach");
  JobProfiler job(JobProfiler::Kind::kineto_v2, JobProfiler::Teardown::after_each_profile);
  for (const char* round : {"first profile", "second profile"}) {
    const std::string name = round;
    fake_cupti_clear_call_log();
    job.start();
    check(job.subscribed(), name + ": the job's profiler got CUPTI");
    const std::string expected =
        "cuptiSubscribe_v2 " + kSwitchOffCalls + " cuptiSubscribe_v2 " + kProfileStartCalls;
    check(fake_cupti_call_log() == expected,
          name + ": exactly " + expected + " (log: " + std::string(fake_cupti_call_log()) + ")");
    check(*s.state == 7, name + ": state 7");
    Readers got = s.run();
    check(got.job == s.records() && got.shim == 0, name + ": the job's profile got every record");
    fake_cupti_clear_call_log();
    job.stop();
    check(wait_for_state(s.state, 1), name + " done, CUPTI given back: the shim switched on again (state 1)");
    check(fake_cupti_call_log() == kJobStopCalls + " cuptiUnsubscribe " + switch_on_calls(),
          name + " done: the job's teardown, then the shim's switch on (log: " + std::string(fake_cupti_call_log()) +
              ")");
    got = s.run();
    check(got.shim == s.records() && got.job == 0, name + " done: the shim walked all records");
  }
  s.detach("detach");
}

// Kineto's library loaded while the shim traces (a job that imports its
// profiler late): the watcher's next look reaches its calls too.
void profiler_loaded_while_tracing(Scenario& s) {
  s.attach("attach");
  char exe[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string library = n > 0 ? std::string(exe, size_t(n)) : "";
  library = library.substr(0, library.rfind('/') + 1) + "libjob_profiler.so";
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  check(lib != nullptr, "loaded " + library);
  if (!lib) return;
  auto start = reinterpret_cast<void (*)()>(dlsym(lib, "job_profiler_start"));
  auto stop = reinterpret_cast<void (*)()>(dlsym(lib, "job_profiler_stop"));
  auto records = reinterpret_cast<uint64_t (*)()>(dlsym(lib, "job_profiler_records"));
  let_the_watcher_look();
  fake_cupti_clear_call_log();
  const uint64_t walked = fake_cupti_records_walked(), job = records();
  start();
  const std::string expected = "cuptiSubscribe " + kSwitchOffCalls + " cuptiSubscribe " + kProfileStartCalls;
  check(fake_cupti_call_log() == expected, "the late library's cuptiSubscribe reached the shim: exactly " +
                                               expected + " (log: " + std::string(fake_cupti_call_log()) + ")");
  check(*s.state == 7, "state 7 (is " + std::to_string(*s.state) + ")");
  s.run();
  check(records() - job == s.records() && fake_cupti_records_walked() - walked == s.records(),
        "the job's profile got every record, the shim none");
  stop();
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, -1);
  check(wait_for_state(s.state, 6), "detached: state 6");
  check(std::string(fake_cupti_call_log()).empty(), "detached: no CUPTI call");
}

// A profiler that uses only the activity API (no subscription: the shim
// cannot hear it) starts while the shim is on: its buffer callbacks win.
void activities_only_while_tracing(Scenario& s) {
  s.attach("attach");
  JobProfiler job(JobProfiler::Kind::activities_only);
  job.start();
  check(!job.subscribed() && !job.cpu_only(), "the job's profiler uses the activity API only");
  Readers got = s.run();
  check(got.job == s.records() && got.shim == 0,
        "the job's profiler got all " + std::to_string(s.records()) + " records, gpuprof none (job " +
            std::to_string(got.job) + ", shim " + std::to_string(got.shim) + ")");
  check(*s.state == 1, "the shim still reads as tracing (its launch callbacks still fire)");
  job.stop();
  // The job's profiler turned the kinds off: nobody gets records until the
  // shim switches on again, at the next attach.
  got = s.run();
  check(got.job == 0 && got.shim == 0, "after the job's profile: no records for anyone while this tracer stays");
  // Launches seen and no record came to the shim: not its records to turn off.
  s.detach("detach", kSwitchOffLeavingKindsCalls);
  check(nothing_on(), "nothing left on (the job's profiler had turned its kinds off)");
  s.attach("attach again");
  got = s.run();
  check(got.shim == s.records() && got.job == 0, "attached again: the shim walked all records");
  s.detach("detach again");
}

// The tracer detaches in the middle of that profile: the shim leaves the
// job's kinds on and the profile goes on whole.
void activities_only_spans_detach(Scenario& s) {
  s.attach("attach");
  JobProfiler job(JobProfiler::Kind::activities_only);
  job.start();
  Readers got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's profiler got all records while the tracer was attached");
  s.run(/*deliver=*/false);  // in CUPTI's buffers at the detach: the job's
  s.detach("detach during the job's profile", kSwitchOffLeavingKindsCalls);
  got = walked_since(s.walked);
  check(got.job == s.records() && got.shim == 0, "the records in CUPTI's buffers at the detach went to the job");
  check(!fake_cupti_subscribed() && fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
            fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMCPY) &&
            fake_cupti_activity_enabled(CUPTI_ACTIVITY_KIND_MEMSET),
        "unsubscribed, the job's activity kinds still on");
  got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's profile goes on whole after the detach");
  job.stop();
  s.untraced("the job's profile done");
  s.attach("attach again");
  got = s.run();
  check(got.shim == s.records() && got.job == 0, "attached again: the shim walked all records");
  s.detach("detach again");
}

// A tracer attaches while Kineto (TEARDOWN_CUPTI=1) profiles: the shim
// touches nothing of the job's (state 3) and switches on once the job's
// profiler has given CUPTI back.
void tracer_while_profiling(Scenario& s) {
  JobProfiler job(JobProfiler::Kind::kineto, JobProfiler::Teardown::after_each_profile);
  job.start();
  check(job.subscribed(), "the job's profiler subscribed");
  fake_cupti_clear_call_log();
  move_semaphores(s.semaphores, +1);
  check(wait_for_state(s.state, 3), "attached: state 3 (taken)");
  Readers got = s.run();
  check(got.job == s.records() && got.shim == 0, "the job's profiler got all records while the tracer waited");
  let_the_watcher_look();
  const std::string calls = fake_cupti_call_log();
  check(only_calls_to(calls, "cuptiSubscribe"),
        "the shim only tried cuptiSubscribe: the job's setup untouched (log: " + calls + ")");
  job.stop();
  check(wait_for_state(s.state, 1), "the job's profiler done: the shim switched on (state 1) within a second or two");
  got = s.run();
  check(got.shim == s.records() && got.job == 0, "the shim walked all records after the job's profile");
  s.detach("detach");
}

}  // namespace

int main(int argc, char** argv) {
  int expect_state = -1;
  std::string scenario;
  bool probes_on = false;
  bool final_deliver = true;
  int arg = 1;
  for (; arg < argc && std::strncmp(argv[arg], "--", 2) == 0; ++arg) {
    if (std::strncmp(argv[arg], "--check=", 8) == 0)
      expect_state = std::atoi(argv[arg] + 8);
    else if (std::strcmp(argv[arg], "--probes-on") == 0)
      probes_on = true;
    else if (std::strcmp(argv[arg], "--no-final-deliver") == 0)
      final_deliver = false;
    else if (std::strncmp(argv[arg], "--scenario=", 11) == 0)
      scenario = argv[arg] + 11;
  }
  if (argc - arg < 2) {
    std::fprintf(stderr,
                 "usage: %s [--check=STATE] [--probes-on] [--no-final-deliver] SHIM STEPS [READY_FILE GO_FILE]\n"
                 "       %s --scenario=NAME SHIM STEPS\n",
                 argv[0], argv[0]);
    return 2;
  }
  const char* shim_path = argv[arg];
  const int steps = std::atoi(argv[arg + 1]);

  void* shim = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
  if (!shim) {
    std::fprintf(stderr, "cupti_driver: %s\n", dlerror());
    return 2;
  }
  auto* initialize = reinterpret_cast<int (*)()>(dlsym(shim, "InitializeInjection"));
  auto* state = static_cast<volatile int*>(dlsym(shim, "gpuprof_cupti_state"));
  if (!initialize || !state) {
    std::fprintf(stderr, "cupti_driver: %s lacks InitializeInjection or gpuprof_cupti_state\n", shim_path);
    return 2;
  }
  const std::vector<volatile unsigned short*> semaphores = find_semaphores(shim);
  if (semaphores.size() != 3) {
    std::fprintf(stderr, "cupti_driver: %s names %zu semaphores in its stapsdt notes, not 3\n", shim_path,
                 semaphores.size());
    return 2;
  }
  // A tracer attached before the driver initializes the shim.
  if (probes_on) move_semaphores(semaphores, +1);
  int returned = 0;
  const std::string log = capture_stderr([&] { returned = initialize(); });
  if (!scenario.empty()) {
    check(returned == 1 && *state == 6, "initialized dormant (state " + std::to_string(*state) + ")");
    Scenario s{state, semaphores, steps, {}, {}};
    if (scenario == "attach-cycle")
      attach_cycle(s);
    else if (scenario == "profiler-while-dormant")
      profiler_while_dormant(s);
    else if (scenario == "profiler-while-tracing")
      profiler_while_tracing(s, JobProfiler::Kind::kineto);
    else if (scenario == "profiler-v2-while-tracing")
      profiler_while_tracing(s, JobProfiler::Kind::kineto_v2);
    else if (scenario == "profiler-loaded-while-tracing")
      profiler_loaded_while_tracing(s);
    else if (scenario == "profiler-with-teardown")
      profiler_with_teardown(s);
    else if (scenario == "activities-only-while-tracing")
      activities_only_while_tracing(s);
    else if (scenario == "activities-only-spans-detach")
      activities_only_spans_detach(s);
    else if (scenario == "tracer-while-profiling")
      tracer_while_profiling(s);
    else
      check(false, "known scenario " + scenario);
    std::printf("%s\n", g_failures ? "FAIL" : "PASS: all checks");
    return g_failures ? 1 : 0;
  }
  if (expect_state >= 0) {
    check(returned == 1, "InitializeInjection returns 1");
    check_initialization(expect_state, *state, log);
    const int before = *state;
    const std::string again = capture_stderr([&] { returned = initialize(); });
    check(returned == 1 && again.empty() && *state == before, "a second InitializeInjection changes nothing");
  }

  if (argc - arg >= 4) {
    // Written whole, then renamed into place: the test never reads it half written.
    const std::string ready = argv[arg + 2], partial = ready + ".partial";
    std::ofstream(partial) << getpid() << "\n";
    std::rename(partial.c_str(), ready.c_str());
    while (access(argv[arg + 3], F_OK) != 0) usleep(10 * 1000);
  }
  Counts c;
  for (int step = 0; step < steps; ++step) run_step(c, step == steps - 1, final_deliver || step < steps - 1);

  const uint64_t walked = fake_cupti_records_walked();
  if (expect_state >= 0 && steps > 0 && final_deliver) {
    check(c.first_id == 1 && c.last_id == uint64_t(steps) * 9, "correlation ids 1.." + std::to_string(steps * 9));
    if (expect_state == 1 && probes_on)
      check(walked == c.activity_probes, "the shim walked every delivered record (" + std::to_string(walked) + ")");
    else
      check(walked == 0, "no tracer, no records walked");
  }
  std::printf("cupti_driver: steps %d correlation ids %llu..%llu kernels %llu memcpy %llu memset %llu state %d "
              "records walked %llu expect launch probes %llu activity probes %llu dropped 3\n",
              steps, (unsigned long long)c.first_id, (unsigned long long)c.last_id, (unsigned long long)c.kernels,
              (unsigned long long)c.memcpys, (unsigned long long)c.memsets, *state, (unsigned long long)walked,
              (unsigned long long)c.launch_probes, (unsigned long long)c.activity_probes);
  if (expect_state >= 0) std::printf("%s\n", g_failures ? "FAIL" : "PASS: all checks");
  return g_failures ? 1 : 0;
}
