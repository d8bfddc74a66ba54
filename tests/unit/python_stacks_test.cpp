// python_stacks_test.cpp: PythonPathShortener rules, and PythonStackNamer on
// a live Debian /usr/bin/python3 (CPython 3.11): module calls named as
// torch's Python tracer names them, paths shortened as torch shortens them.
#include "interpreters.h"
#include "python/python_stacks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "op_tracer_abi.h"
#include "python/python_paths.h"

namespace gpuprof {
namespace {

TEST(PythonPaths, LongestPrefixWins) {
  PythonPathShortener paths({"/work", "/work/models/", "/opt"});
  EXPECT_EQ(paths.shorten("/work/train.py"), "train.py");
  EXPECT_EQ(paths.shorten("/work/models/resnet.py"), "resnet.py");
  EXPECT_EQ(paths.shorten("/workshop/x.py"), "/workshop/x.py");  // a prefix of a name, not a directory
  EXPECT_EQ(paths.shorten("/elsewhere/x.py"), "/elsewhere/x.py");  // torch prints it whole too
}

TEST(PythonPaths, StandardEntries) {
  PythonPathShortener paths;
  EXPECT_EQ(paths.shorten("/usr/lib/python3/dist-packages/torch/nn/modules/conv.py"),
            "torch/nn/modules/conv.py");
  EXPECT_EQ(paths.shorten("/usr/local/lib/python3.12/site-packages/torchvision/models/resnet.py"),
            "torchvision/models/resnet.py");
  EXPECT_EQ(paths.shorten("/usr/lib/python3.11/json/__init__.py"), "json/__init__.py");
  EXPECT_EQ(paths.shorten("/root/.pyenv/versions/3.11.9/lib/python3.11/threading.py"), "threading.py");
  // /usr/lib/python3 itself is no sys.path entry.
  EXPECT_EQ(paths.shorten("/usr/lib/python3/x.py"), "/usr/lib/python3/x.py");
  // A venv's site-packages under a script directory: the longer one wins.
  PythonPathShortener with_dir({"/srv/app"});
  EXPECT_EQ(with_dir.shorten("/srv/app/.venv/lib/python3.12/site-packages/torch/functional.py"),
            "torch/functional.py");
}

TEST(PythonPaths, SysPath0FromCommandLine) {
  EXPECT_EQ(python_sys_path0({"python3", "/srv/app/train.py", "--epochs", "3"}, "/home"), "/srv/app");
  EXPECT_EQ(python_sys_path0({"python3", "-u", "-W", "ignore", "/srv/train.py"}, "/home"), "/srv");
  EXPECT_EQ(python_sys_path0({"python3", "-c", "print(1)"}, "/home/me"), "/home/me");
  EXPECT_EQ(python_sys_path0({"python3", "-m", "pkg.main"}, "/home/me"), "/home/me");
  EXPECT_EQ(python_sys_path0({"python3"}, "/home/me"), "/home/me");
}

// A stand-in for torch/nn/modules/module.py: the names and the file are
// what PythonStackNamer recognises; `self` is the first argument, once
// captured by a closure (a cell in the frame).
constexpr const char* kModuleSource = R"PY(
def _call_impl(self, *args):
    return self

def _wrapped_call_impl(self, *args):
    def inner():
        return self
    return inner()

def plain(self):
    return self
)PY";

constexpr const char* kScript = R"PY(import sys, os
here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, "pkg", "torch", "nn", "modules", "module.py")
ns = {}
exec(compile(open(path).read(), path, "exec"), ns)
class Conv2d: pass
class ReLU: pass
objs = [Conv2d(), Conv2d(), ReLU()]
cell = ns["_wrapped_call_impl"].__code__  # closure over self: self is a cell there
print("call_impl", id(ns["_call_impl"].__code__))
print("wrapped", id(ns["_wrapped_call_impl"].__code__))
print("plain", id(ns["plain"].__code__))
for i, o in enumerate(objs):
    print("obj%d" % i, id(o))
import types
c = types.CellType(objs[2])
print("cell", id(c))
print("READY", flush=True)
import time; time.sleep(30)
)PY";

class NamerChild {
 public:
  explicit NamerChild(const std::string& python) {
    char dir_template[] = "/tmp/gpuprof_pystack_XXXXXX";
    dir_ = mkdtemp(dir_template);
    std::system(("mkdir -p " + dir_ + "/pkg/torch/nn/modules").c_str());
    std::ofstream(dir_ + "/pkg/torch/nn/modules/module.py") << kModuleSource;
    std::ofstream(dir_ + "/prog.py") << kScript;
    FILE* in = nullptr;
    pid_ = testing_support::start_python_script(python, dir_ + "/prog.py", &in);
    if (!in) return;
    char name[64];
    unsigned long long value;
    while (fscanf(in, "%63s", name) == 1) {
      if (std::string(name) == "READY") {
        ready_ = true;
        break;
      }
      if (fscanf(in, "%llu", &value) == 1) values_[name] = value;
    }
    fclose(in);
  }
  ~NamerChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }
  uint64_t operator[](const std::string& key) const { return values_.at(key); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  bool ready_ = false;
  std::map<std::string, uint64_t> values_;
};

// Debian's 3.11 and the pyenv 3.12 and 3.13 of this machine's image (by
// minor version; 0 = Debian's).
class PythonStacksLive : public ::testing::TestWithParam<int> {
 protected:
  std::string python() const {
    return GetParam() ? testing_support::pyenv_python(GetParam()) : testing_support::kDebianPython;
  }
};

TEST_P(PythonStacksLive, ModuleCallsAndPaths) {
  const std::string interpreter = python();
  ASSERT_FALSE(interpreter.empty()) << "no pyenv CPython 3." << GetParam();
  ASSERT_EQ(access(interpreter.c_str(), X_OK), 0) << interpreter << " missing";
  NamerChild child(interpreter);
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.ready()) << interpreter << " did not start";
  Result<PythonRuntime> rt = find_python_runtime(child.pid());
  for (int i = 1; i < 100 && !rt; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rt = find_python_runtime(child.pid());
  }
  ASSERT_TRUE(rt) << rt.error();
  PythonStackNamer namer(child.pid(), rt->offsets, PythonPathShortener({child.dir() + "/pkg"}));
  const uint64_t unit0 = rt->offsets.code_bytecode;  // the first instruction: firstlineno
  const uint64_t call_impl = child["call_impl"], wrapped = child["wrapped"], plain = child["plain"];

  // Innermost first, as BPF sends them: {code, instr, first local} per frame.
  std::vector<uint64_t> words = {
      plain,     plain + unit0 + 2, child["obj0"],  // a plain frame, at line 11: printed at its def line
      call_impl, call_impl + unit0, child["obj0"],  // 1.x module call
      call_impl, call_impl + unit0, child["obj1"],  // another instance of the class
      call_impl, call_impl + unit0, child["obj0"],  // the first instance again
      call_impl, call_impl + unit0, child["obj2"],  // 2.x: _call_impl under...
      wrapped,   wrapped + unit0,   child["cell"],  // ..._wrapped_call_impl, self in a cell
  };
  static_assert(GP_ENTRY_FRAME_WORDS == 3);
  const std::string file = "torch/nn/modules/module.py";
  EXPECT_EQ(namer.entry_stack(words),
            (std::vector<std::string>{file + "(10): plain", "nn.Module: Conv2d_0", "nn.Module: Conv2d_1",
                                      "nn.Module: Conv2d_0", file + "(2): _call_impl",
                                      "nn.Module: ReLU_0"}));
  // A sample's frame is at its current line.
  EXPECT_EQ(namer.frame(plain, plain + unit0 + 2), file + "(11): plain");
  EXPECT_EQ(namer.frame(8, 16), "[unknown Python frame]");
  // An unreadable module object does not take a number.
  EXPECT_EQ(namer.entry_stack(std::vector<uint64_t>{call_impl, call_impl + unit0, 8}),
            std::vector<std::string>{"nn.Module: [unknown]"});
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonStacksLive, ::testing::Values(0, 12, 13),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param ? "Pyenv3" + std::to_string(info.param)
                                             : std::string("Debian311");
                         });

}  // namespace
}  // namespace gpuprof
