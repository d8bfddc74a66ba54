// shim_injection.cpp: inject_cupti_shim_into (shim_injection.h).
#include "collect/shim_injection.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "collect/target_gpu.h"
#include "record/cupti_shim_state.h"
#include "target/library_injection.h"
#include "target/process_memory.h"
#include "target/target_process.h"

namespace gpuprof {
namespace {

// How long the target may take from running the trampoline to the shim's
// state being set: dlopen of the shim and InitializeInjection.
constexpr auto kShimLoadTimeout = std::chrono::seconds(10);

// CUDA_INJECTION64_PATH in the environment the target was started with.
std::string injection_variable(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0'))
    if (entry.starts_with("CUDA_INJECTION64_PATH=")) return entry.substr(entry.find('=') + 1);
  return "";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// FNV-1a: names a copy of the shim by its content.
uint64_t content_hash(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The shim's path as the target opens it: gpuprof's own when the target
// sees the same file there (same root and mounts); else a copy in the
// target's /tmp (a chroot, a container), named by its content.
Result<std::string> shim_path_for_target(int pid, const std::string& shim) {
  struct stat ours {}, theirs {};
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  if (stat(shim.c_str(), &ours) != 0) return Error("cannot stat " + shim);
  if (stat((root + shim).c_str(), &theirs) == 0 && theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)
    return shim;
  const std::string bytes = file_bytes(shim);
  char name[64];
  std::snprintf(name, sizeof(name), "/tmp/%s-%016llx.so", kCuptiShimFilePrefix,
                static_cast<unsigned long long>(content_hash(bytes)));
  const std::string copy = root + name;
  if (file_bytes(copy) == bytes) return std::string(name);
  const std::string partial = copy + ".partial-" + std::to_string(getpid());
  {
    std::ofstream out(partial, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) return Error("cannot copy the shim to " + copy + " (the target's root is not gpuprof's)");
  }
  chmod(partial.c_str(), 0644);
  if (rename(partial.c_str(), copy.c_str()) != 0) {
    unlink(partial.c_str());
    return Error("cannot copy the shim to " + copy);
  }
  std::fprintf(stderr, "gpuprof: process %d has another root: copied the shim to %s there\n", pid, name);
  return std::string(name);
}

// GPUPROF_TEST_INJECT_PAUSE_AT=STEP: the tests' way to SIGKILL gpuprof at
// each step of the injection (it says so, then waits to be killed).
void pause_if_asked(std::string_view step) {
  const char* at = std::getenv("GPUPROF_TEST_INJECT_PAUSE_AT");
  if (!at || step != at) return;
  std::fprintf(stderr, "gpuprof: test: paused at step %s\n", at);
  for (;;) pause();
}

// The shim's state once it is set, or 0 at the timeout.
uint32_t wait_for_shim_state(int pid) {
  const auto deadline = std::chrono::steady_clock::now() + kShimLoadTimeout;
  while (std::chrono::steady_clock::now() < deadline && process_alive(pid)) {
    if (auto address = find_variable_in_target(pid, kCuptiShimFilePrefix, "gpuprof_cupti_state")) {
      int32_t state = 0;
      if (read_process_memory(pid, *address, {reinterpret_cast<uint8_t*>(&state), sizeof(state)}) && state != 0)
        return static_cast<uint32_t>(state);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace

Result<void> inject_cupti_shim_into(int pid) {
  auto shim = cupti_shim_next_to_gpuprof();
  if (!shim) return Error(std::string(kCuptiShimFilePrefix) + ".so is not next to gpuprof: nothing to inject");
  if (auto mapped = find_mapped_library(pid, kCuptiShimFilePrefix); mapped.library) {
    std::fprintf(stderr, "gpuprof: process %d has the CUPTI shim already (%s): nothing to inject\n", pid,
                 mapped.library->path_in_target.c_str());
    return {};
  }
  if (const std::string variable = injection_variable(pid);
      std::filesystem::path(variable).filename().string().starts_with(kCuptiShimFilePrefix) &&
      !find_mapped_library(pid, "libcuda.so").library) {
    std::fprintf(stderr, "gpuprof: process %d was started with CUDA_INJECTION64_PATH=%s: its CUDA driver loads "
                         "the shim when CUDA starts; nothing to inject\n", pid, variable.c_str());
    return {};
  }
  if (std::string obstacle = injection_obstacle(pid); !obstacle.empty())
    return Error("cannot load the CUPTI shim into process " + std::to_string(pid) + ": " + obstacle);
  // The session refuses a process without libtorch, and says why: nothing
  // is loaded into it first.
  if (!find_mapped_library(pid, "libtorch_cpu").library) return {};
  ASSIGN_OR_RETURN(std::string path, shim_path_for_target(pid, *shim));
  const auto started = std::chrono::steady_clock::now();
  LibraryInjection request;
  request.library_path = path;
  request.function = "InitializeInjection";
  request.at_step = [&](std::string_view step) {
    if (step == "hold")
      std::fprintf(stderr, "gpuprof: loading the CUPTI shim into process %d: waiting for a thread to enter a "
                           "blocking system call (up to %lld s)\n", pid,
                   static_cast<long long>(request.safe_point_timeout.count() / 1000));
    pause_if_asked(step);
  };
  if (auto injected = inject_library(pid, request); !injected)
    return Error("cannot load the CUPTI shim into process " + std::to_string(pid) + ": " +
                 injected.error());
  pause_if_asked("wait");
  const uint32_t state = wait_for_shim_state(pid);
  if (state == 0) {
    if (!process_alive(pid)) return Error("process " + std::to_string(pid) + " exited while the shim loaded");
    const bool mapped = find_mapped_library(pid, kCuptiShimFilePrefix).library.has_value();
    return Error(std::string("the CUPTI shim ") +
                 (mapped ? "was loaded into process " + std::to_string(pid) +
                               " but did not start in 10 s (its thread may be blocked)"
                         : "did not load into process " + std::to_string(pid) + " in 10 s (dlopen of " + path +
                               " failed there, or its thread is blocked)"));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  // Dormant is what a shim loaded with no tracer attached says: it switches
  // CUPTI on once the session's probes go in (docs/cuda.md).
  std::fprintf(stderr, "gpuprof: loaded the CUPTI shim into process %d: the shim %s\n", pid,
               state == kCuptiShimDormant ? "is dormant until gpuprof's probes go in" : cupti_shim_state_text(state));
  std::fprintf(stderr, "gpuprof: the shim's loading took %.1f ms, from the search for a thread to its start\n", ms);
  return {};
}

}  // namespace gpuprof
