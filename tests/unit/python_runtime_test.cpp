// find_python_runtime against live interpreters: Debian's /usr/bin/python3
// (CPython 3.11, non-PIE) and the pyenv builds of this machine's image
// (3.11, 3.12, 3.13 in PIE-loaded libpython3.x.so), and the parser of 3.13's
// _Py_DebugOffsets.
#include "interpreters.h"
#include "python/python_code.h"
#include "python/python_runtime.h"

#include <fstream>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>
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

using testing_support::kDebianPython;
using testing_support::pyenv_python;

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

// Polls until the child is inside time.sleep (blocked in clock_nanosleep,
// syscall 230, or nanosleep, 35): its frames hold still only then; read
// while `import time` runs, a frame below may be reused under the reader
// (seen under load: an owner byte of 0 below 3.13's module frame).
bool wait_until_sleeping(int pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
    long nr = -1;
    if (in >> nr && (nr == 230 || nr == 35)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Polls until the interpreter has initialized autoTSSkey (or 10 s pass).
Result<PythonRuntime> wait_for_runtime(int pid) {
  Result<PythonRuntime> rt = find_python_runtime(pid);
  for (int i = 1; i < 200 && !rt; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rt = find_python_runtime(pid);
  }
  return rt;
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

TEST(PythonRuntime, TablesFor311And312DebugOffsetsFor313) {
  EXPECT_TRUE(python_offsets_for(3, 11));
  EXPECT_TRUE(python_offsets_for(3, 12));
  EXPECT_FALSE(python_offsets_for(3, 10));
  EXPECT_FALSE(python_offsets_for(3, 13));  // from the target's _Py_DebugOffsets instead
  EXPECT_FALSE(python_offsets_for(2, 7));
  EXPECT_EQ(python_offsets_for(3, 11)->frame_code, 32);
  EXPECT_EQ(python_offsets_for(3, 12)->frame_code, 0);
  // PyHeapTypeObject.ht_cached_keys, checked by module_attributes_test.cpp on live interpreters.
  EXPECT_EQ(python_offsets_for(3, 11)->heap_type_cached_keys, 872);
  EXPECT_EQ(python_offsets_for(3, 12)->heap_type_cached_keys, 880);
  EXPECT_TRUE(python_debug_offsets_known(3, 13));
  EXPECT_FALSE(python_debug_offsets_known(3, 12));
  EXPECT_FALSE(python_debug_offsets_known(3, 14));  // another layout of the struct itself
}

TEST(PythonRuntime, NotAPythonProcess) {
  const auto rt = find_python_runtime(getpid());
  ASSERT_FALSE(rt);
  EXPECT_NE(rt.error().find("_PyRuntime"), std::string::npos) << rt.error();
}

// Finds the runtime of `python` (CPython 3.`minor`) and walks the main
// thread's TLS slot -> PyThreadState -> current frame -> code object.
static void check_python(const char* python, int minor, bool debian) {
  ASSERT_EQ(access(python, X_OK), 0) << python << " missing (see the machine's facts in docs)";
  SleepingPython child(python);
  ASSERT_GT(child.pid, 0);
  auto rt = wait_for_runtime(child.pid);
  ASSERT_TRUE(rt) << rt.error();
  EXPECT_EQ(rt->major, 3);
  EXPECT_EQ(rt->minor, minor);
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
  ASSERT_TRUE(wait_until_sleeping(child.pid)) << "the child never reached time.sleep";
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
    uint64_t link = read_u64(child.pid, tstate + o.tstate_cframe);
    ASSERT_NE(link, 0u);
    // 3.11/3.12 go through a _PyCFrame; 3.13 points at the frame directly.
    frame = o.cframe_current_frame == PythonOffsets::kNoField
                ? link
                : read_u64(child.pid, link + o.cframe_current_frame);
    if (!frame) continue;
    uint64_t code = read_u64(child.pid, frame + o.frame_code);
    uint64_t instr = read_u64(child.pid, frame + o.frame_prev_instr);
    // ob_type->tp_name is "code".
    uint64_t type = read_u64(child.pid, code + o.object_type);
    uint64_t tp_name = read_u64(child.pid, type + o.type_name);
    char name[8] = {};
    ASSERT_TRUE(read_target_memory(child.pid, tp_name, name, 5));
    ASSERT_STREQ(name, "code");
    auto t = resolver.frame(code, instr);
    ASSERT_TRUE(t);
    text = *t;
    resolver.next_epoch();
  }
  ASSERT_EQ(text, "<string>(1): <module>");
  // It is the outermost Python frame: 3.11 marks it as the entry frame of
  // the eval loop; 3.12+ have only C shim frames (owner 3) below it.
  if (o.frame_is_entry != PythonOffsets::kNoField) {
    EXPECT_EQ(read_u64(child.pid, frame + o.frame_previous), 0u);
    uint8_t is_entry = 0;
    ASSERT_TRUE(read_target_memory(child.pid, frame + o.frame_is_entry, &is_entry, 1));
    EXPECT_EQ(is_entry, 1);
  } else {
    int shims = 0;
    for (uint64_t below = read_u64(child.pid, frame + o.frame_previous); below && shims < 8;
         below = read_u64(child.pid, below + o.frame_previous), ++shims) {
      uint8_t owner = 0;
      ASSERT_TRUE(read_target_memory(child.pid, below + o.frame_owner, &owner, 1));
      EXPECT_EQ(owner, o.frame_owner_cshim);
    }
    EXPECT_LT(shims, 8);
  }
}

TEST(PythonRuntime, FindsDebianPython311) { check_python(kDebianPython, 11, true); }

// Builds where _PyRuntime lives in a PIE-loaded libpython3.x.so: the load
// bias, the GOT-relative key of 3.11, the register-held key of 3.12/3.13
// (lea rbx, [rax+off]; mov rdi, rbx) and 3.13's _Py_DebugOffsets.
class PyenvPython : public testing::TestWithParam<int> {};

TEST_P(PyenvPython, FindsLibpython) {
  const std::string python = pyenv_python(GetParam());
  ASSERT_FALSE(python.empty()) << "no pyenv CPython 3." << GetParam() << " under /root/.pyenv/versions";
  check_python(python.c_str(), GetParam(), false);
}

INSTANTIATE_TEST_SUITE_P(Versions, PyenvPython, testing::Values(11, 12, 13),
                         [](const testing::TestParamInfo<int>& info) {
                           return "Python3" + std::to_string(info.param);
                         });

// 3.13's offsets come from the target's own _Py_DebugOffsets; they must be
// the values checked by hand on a 3.13 interpreter (docs/stacks.md), and a struct that is
// not 3.13's must be refused, not half-read.
class DebugOffsets313 : public testing::Test {
 protected:
  void SetUp() override {
    const std::string python = pyenv_python(13);
    ASSERT_FALSE(python.empty()) << "no pyenv CPython 3.13 under /root/.pyenv/versions";
    child_ = std::make_unique<SleepingPython>(python.c_str());
    auto rt = wait_for_runtime(child_->pid);
    ASSERT_TRUE(rt) << rt.error();
    bytes_.resize(kPythonDebugOffsetsSize);
    ASSERT_TRUE(read_target_memory(child_->pid, rt->runtime_address, bytes_.data(), bytes_.size()));
  }
  Result<PythonOffsets> parse() { return python_offsets_from_debug_offsets(bytes_.data(), bytes_.size(), 0x030d0000); }
  void set_word(size_t word, uint64_t value) { std::memcpy(&bytes_[word * 8], &value, 8); }
  std::unique_ptr<SleepingPython> child_;
  std::vector<uint8_t> bytes_;
};

TEST_F(DebugOffsets313, MatchTheOffsetsCheckedByHand) {
  auto o = parse();
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->tstate_cframe, 72);  // PyThreadState.current_frame
  EXPECT_EQ(o->cframe_current_frame, PythonOffsets::kNoField);
  EXPECT_EQ(o->frame_code, 0);
  EXPECT_EQ(o->frame_previous, 8);
  EXPECT_EQ(o->frame_prev_instr, 56);
  EXPECT_EQ(o->frame_owner, 70);
  EXPECT_EQ(o->frame_localsplus, 72);
  EXPECT_EQ(o->code_firstlineno, 68);
  EXPECT_EQ(o->code_bytecode, 200);
  EXPECT_EQ(o->code_filename, 112);
  EXPECT_EQ(o->code_name, 120);
  EXPECT_EQ(o->code_qualname, 128);
  EXPECT_EQ(o->code_linetable, 136);
  EXPECT_EQ(o->str_ascii_data, 40);
  EXPECT_EQ(o->str_compact_data, 56);
  EXPECT_EQ(o->str_length, 16);
  EXPECT_EQ(o->str_state, 32);
  EXPECT_EQ(o->object_type, 8);
  EXPECT_EQ(o->type_name, 24);
  EXPECT_EQ(o->bytes_size, 16);
  EXPECT_EQ(o->bytes_data, 32);
  // Instance dicts (python/python_dicts.h): the struct's, then 3.13's own table.
  EXPECT_EQ(o->type_flags, 168);
  EXPECT_EQ(o->dict_keys, 32);
  EXPECT_EQ(o->dict_values, 40);
  EXPECT_EQ(o->heap_type_cached_keys, 880);
  EXPECT_EQ(o->managed_dict, PythonOffsets::ManagedDict::kInlineValues);
  EXPECT_EQ(o->values_array, 8);
  EXPECT_EQ(o->values_valid, 3);
}

TEST_F(DebugOffsets313, RefusesWhatIsNot313sLayout) {
  const std::vector<uint8_t> good = bytes_;
  bytes_[0] = 'y';  // cookie
  auto o = parse();
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find("xdebugpy"), std::string::npos) << o.error();
  bytes_ = good;
  set_word(1, 0x030e00f0);  // a 3.14 struct: another layout
  o = parse();
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find("3.14"), std::string::npos) << o.error();
  bytes_ = good;
  set_word(2, 1);  // free-threaded
  o = parse();
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find("free-threaded"), std::string::npos) << o.error();
  bytes_ = good;
  set_word(29, 4096);  // frame.previous beyond sizeof(_PyInterpreterFrame)
  o = parse();
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find("not 3.13's layout"), std::string::npos) << o.error();
  bytes_ = good;
  set_word(57, 48);  // dict.ma_keys at sizeof(PyDictObject)
  o = parse();
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find("not 3.13's layout"), std::string::npos) << o.error();
  bytes_ = good;
  const auto cut = python_offsets_from_debug_offsets(bytes_.data(), bytes_.size() - 1, 0x030d0000);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error(), "_Py_DebugOffsets is cut short");
  o = parse();
  EXPECT_TRUE(o) << o.error();
}

// decode_tss_key_address on the shapes of PyGILState_GetThisThreadState
// that interpreters in use compile to (python_runtime.cpp lists them).
static std::optional<uint64_t> no_got(uint64_t) { return std::nullopt; }

TEST(DecodeTssKey, UbuntuPython312NonPieImmediate) {
  // Ubuntu 24.04's /usr/bin/python3.12 (3.12.3, non-PIE), as objdump shows
  // it: PyGILState_GetThisThreadState at 0x608290, _PyRuntime at 0xb363c0.
  const std::vector<uint8_t> code = {
      0xf3, 0x0f, 0x1e, 0xfa,              // endbr64
      0x55,                                // push %rbp
      0xbf, 0xc8, 0x69, 0xb3, 0x00,        // mov $0xb369c8,%edi  (&_PyRuntime.autoTSSkey)
      0x48, 0x89, 0xe5,                    // mov %rsp,%rbp
      0xe8, 0x2e, 0x82, 0x00, 0x00,        // call PyThread_tss_is_created
      0x85, 0xc0,                          // test %eax,%eax
      0x0f, 0x84, 0xab, 0xa5, 0xea, 0xff,  // je ...
      0xbf, 0xc8, 0x69, 0xb3, 0x00,        // mov $0xb369c8,%edi
      0x5d,                                // pop %rbp
      0xe9, 0x2b, 0x82, 0x00, 0x00};       // jmp PyThread_tss_get
  auto key = decode_tss_key_address(code, 0x608290, 0xb363c0, no_got);
  ASSERT_TRUE(key.has_value()) << key.error();
  EXPECT_EQ(*key, 0xb369ccu);  // Py_tss_t._key, after _is_initialized
}

TEST(DecodeTssKey, NonPicLoadOfTheKeyItself) {
  // mov 0x124e(%rip),%edi at 0x1000 reads 0x2254: the key itself.
  const std::vector<uint8_t> code = {0x8b, 0x3d, 0x4e, 0x12, 0x00, 0x00,  // mov edi, [rip+0x124e]
                                     0xe9, 0x00, 0x00, 0x00, 0x00};       // jmp pthread_getspecific
  auto key = decode_tss_key_address(code, 0x1000, 0x2000, no_got);
  ASSERT_TRUE(key.has_value()) << key.error();
  EXPECT_EQ(*key, 0x2254u);
}

TEST(DecodeTssKey, PicThroughTheGotAndACalleeSavedRegister) {
  const std::vector<uint8_t> code = {0x48, 0x8b, 0x05, 0xf9, 0x2f, 0x00, 0x00,  // mov rax, [rip+0x2ff9]: GOT 0x4000
                                     0x48, 0x8d, 0x98, 0x70, 0x08, 0x00, 0x00,  // lea rbx, [rax+0x870]
                                     0x48, 0x89, 0xdf,                          // mov rdi, rbx
                                     0xe8, 0x00, 0x00, 0x00, 0x00};             // call PyThread_tss_is_created
  auto got = [](uint64_t slot) -> std::optional<uint64_t> {
    return slot == 0x4000 ? std::optional<uint64_t>(0x400000) : std::nullopt;
  };
  auto key = decode_tss_key_address(code, 0x1000, 0x400000, got);  // _PyRuntime at 0x400000
  ASSERT_TRUE(key.has_value()) << key.error();
  EXPECT_EQ(*key, 0x400874u);
  // The same code when the GOT slot holds something else: no key.
  const auto other = decode_tss_key_address(code, 0x1000, 0x400000, no_got);
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error(), "no load of autoTSSkey found in PyGILState_GetThisThreadState");
}

TEST(DecodeTssKey, AnImmediateOutsideTheRuntimeIsNotTheKey) {
  const std::vector<uint8_t> code = {0xbf, 0x00, 0x10, 0x00, 0x00,  // mov $0x1000,%edi
                                     0xe9, 0x00, 0x00, 0x00, 0x00};
  EXPECT_FALSE(decode_tss_key_address(code, 0x500, 0x2000, no_got).has_value());
}


}  // namespace gpuprof
