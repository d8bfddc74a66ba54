// find_python_runtime against a live Debian /usr/bin/python3 (CPython 3.11).
#include "python_code.h"
#include "python_runtime.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace gpuprof {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

struct SleepingPython {
  pid_t pid = -1;
  explicit SleepingPython(const char* python) {
    pid = fork();
    if (pid == 0) {
      execl(python, python, "-c", "import time; time.sleep(30)", nullptr);
      _exit(127);
    }
  }
  ~SleepingPython() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Polls until the interpreter has initialized autoTSSkey (or 10 s pass).
std::optional<PythonRuntime> wait_for_runtime(int pid, std::string* why) {
  for (int i = 0; i < 200; ++i) {
    auto rt = find_python_runtime(pid, why);
    if (rt) return rt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

// fs base of a stopped-for-a-moment thread, through ptrace (test-only).
std::optional<uint64_t> fsbase_of(pid_t tid) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) return std::nullopt;
  std::optional<uint64_t> out;
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) {
    int status = 0;
    if (waitpid(tid, &status, __WALL) == tid) {
      user_regs_struct regs{};
      if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) == 0) out = regs.fs_base;
    }
  }
  ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  return out;
}

uint64_t read_u64(int pid, uint64_t addr) {
  uint64_t v = 0;
  EXPECT_TRUE(read_target_memory(pid, addr, &v, 8)) << std::hex << addr;
  return v;
}

}  // namespace

TEST(PythonRuntime, OffsetsOnlyFor311And312) {
  EXPECT_TRUE(python_offsets_for(3, 11));
  EXPECT_TRUE(python_offsets_for(3, 12));
  EXPECT_FALSE(python_offsets_for(3, 10));
  EXPECT_FALSE(python_offsets_for(3, 13));
  EXPECT_FALSE(python_offsets_for(2, 7));
  EXPECT_EQ(python_offsets_for(3, 11)->frame_code, 32);
  EXPECT_EQ(python_offsets_for(3, 12)->frame_code, 0);
}

TEST(PythonRuntime, NotAPythonProcess) {
  std::string why;
  EXPECT_FALSE(find_python_runtime(getpid(), &why));
  EXPECT_NE(why.find("_PyRuntime"), std::string::npos) << why;
}

// Finds the runtime of `python` (a CPython 3.11) and walks the main thread's
// TLS slot -> PyThreadState -> current frame -> code object.
static void check_python311(const char* python, bool debian) {
  ASSERT_EQ(access(python, X_OK), 0) << python << " missing (see the machine's facts in docs)";
  SleepingPython child(python);
  ASSERT_GT(child.pid, 0);
  std::string why;
  auto rt = wait_for_runtime(child.pid, &why);
  ASSERT_TRUE(rt) << why;
  EXPECT_EQ(rt->major, 3);
  EXPECT_EQ(rt->minor, 11);
  EXPECT_LT(rt->tss_key, 32u);
  EXPECT_FALSE(rt->description.empty());
  std::printf("%s\n", rt->description.c_str());
  EXPECT_NE(rt->path_in_target.find("python3"), std::string::npos);
  // Debian 3.11.2's _PyRuntime.gilstate.autoTSSkey._key is at +0x254.
  if (debian && rt->micro == 2) {
    EXPECT_EQ(rt->tss_key_field_offset, 0x254u) << rt->description;
  }
  EXPECT_EQ(rt->tss_key_address, rt->runtime_address + rt->tss_key_field_offset);

  // Cross-check the key end to end: the main thread's TLS slot for it holds
  // its PyThreadState, whose current frame runs the "-c" module code (once
  // start-up imports are over: retry while the child is still importing).
  const PythonOffsets& o = rt->offsets;
  PythonCodeResolver resolver(child.pid, o);
  std::string text;
  uint64_t frame = 0;
  for (int attempt = 0; attempt < 100 && text != "<string>(1): <module>"; ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto fsbase = fsbase_of(child.pid);
    ASSERT_TRUE(fsbase) << "ptrace unavailable (the unit tests run as root): " << std::strerror(errno);
    auto slot = glibc_tls_slot_address(*fsbase, rt->tss_key);
    ASSERT_TRUE(slot);
    uint64_t tstate = read_u64(child.pid, *slot);
    ASSERT_NE(tstate, 0u);
    uint64_t cframe = read_u64(child.pid, tstate + o.tstate_cframe);
    ASSERT_NE(cframe, 0u);
    frame = read_u64(child.pid, cframe + o.cframe_current_frame);
    if (!frame) continue;
    uint64_t code = read_u64(child.pid, frame + o.frame_code);
    uint64_t instr = read_u64(child.pid, frame + o.frame_prev_instr);
    // ob_type->tp_name (PyTypeObject: ob_base 24 bytes, tp_name @24) is "code".
    uint64_t type = read_u64(child.pid, code + 8);
    uint64_t tp_name = read_u64(child.pid, type + 24);
    char name[8] = {};
    ASSERT_TRUE(read_target_memory(child.pid, tp_name, name, 5));
    ASSERT_STREQ(name, "code");
    auto t = resolver.frame(code, instr);
    ASSERT_TRUE(t);
    text = *t;
    resolver.next_epoch();
  }
  ASSERT_EQ(text, "<string>(1): <module>");
  // It is the outermost Python frame: no previous frame, and an entry frame.
  EXPECT_EQ(read_u64(child.pid, frame + o.frame_previous), 0u);
  uint8_t is_entry = 0;
  ASSERT_TRUE(read_target_memory(child.pid, frame + o.frame_is_entry, &is_entry, 1));
  EXPECT_EQ(is_entry, 1);
}

TEST(PythonRuntime, FindsDebianPython311) { check_python311(kPython, true); }

// A non-Debian build where _PyRuntime lives in a PIE-loaded libpython3.11.so:
// the pyenv CPython 3.11 that this kind of machine has as the `python3` on
// PATH (its image, not the project, installs it). Exercises the load-bias
// path. Missing, it fails rather than skips.
TEST(PythonRuntime, FindsLibpython311) {
  std::string found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/root/.pyenv/versions", error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("3.11.")) found = (entry.path() / "bin" / "python3").string();
  }
  ASSERT_FALSE(found.empty()) << "no pyenv CPython 3.11 under /root/.pyenv/versions";
  check_python311(found.c_str(), false);
}

}  // namespace gpuprof
