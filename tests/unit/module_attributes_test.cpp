// ModuleAttributes against live interpreters: Debian's /usr/bin/python3
// (3.11) and the pyenv 3.11, 3.12 and 3.13 of this machine's image. The
// child (no torch: a class standing in for nn.Module, holding `_modules`
// like it) keeps its attributes in each form CPython has for them, says
// which form each parent has (read with ctypes from inside), and the
// addresses and names of its (parent, child) pairs; ModuleAttributes must
// find every name reading its memory from outside.
#include "interpreters.h"
#include "python/module_attributes.h"
#include "python/python_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gpuprof {
namespace {

constexpr const char* kScript = R"PY(import collections, ctypes, os, sys, time
MINOR = sys.version_info[1]

class Module:  # stands in for torch.nn.Module: children in self._modules
    pass

class ExceptionModule(Exception):  # its __dict__ sits at BaseException's tp_dictoffset
    pass

def word(address):
    return ctypes.c_uint64.from_address(address).value

def form(obj):
    """Where obj's attributes are: "values" (no dict object), "split" (a
    dict sharing its type's keys), "combined", or "dictoffset"."""
    if not type(obj).__flags__ & (1 << 4):  # Py_TPFLAGS_MANAGED_DICT
        return "dictoffset"
    if MINOR == 11:
        values, d = word(id(obj) - 32), word(id(obj) - 24)
    elif MINOR == 12:
        w = word(id(obj) - 24)
        values, d = w & 1, (0 if w & 1 else w)
    else:
        d = word(id(obj) - 24)
        values = not d
    if values:
        return "values"
    return "split" if word(d + 40) else "combined"  # ma_values

def make(cls, modules):
    m = cls()
    m.training = True
    m._parameters = {}
    m._modules = modules
    return m

leaves = [Module() for _ in range(9)]
parents = {}
parents["values"] = make(Module, {"conv1": leaves[0], "bn1": leaves[1]})
parents["split"] = make(Module, collections.OrderedDict([("0", leaves[2]), ("1", leaves[3])]))
parents["split"].__dict__
parents["general"] = make(Module, {"layer1": leaves[4], "fc": None})
parents["general"].__dict__[1] = "a key that is no str"
parents["unicode"] = make(Module, {"grüße": leaves[5], "関数": leaves[6], "x" * 257: leaves[7]})
vars(parents["unicode"]).update({"extra%d" % i: i for i in range(40)})
parents["dictoffset"] = make(ExceptionModule, {"head": leaves[8]})
parents["twice"] = make(Module, {"first": leaves[0], "second": leaves[0]})

for case, parent in parents.items():
    print("FORM", case, form(parent))
for case, parent in parents.items():
    for name, child in parent._modules.items():
        if child is not None and (case != "twice" or name == "first") and len(name) <= 256:
            print("PAIR", case, "%x" % id(parent), "%x" % id(child), name)
print("STRANGER %x %x" % (id(parents["values"]), id(leaves[8])))
print("LONG %x %x" % (id(parents["unicode"]), id(leaves[7])))
print("READY", flush=True)
add = os.path.join(os.path.dirname(__file__), "add")
deadline = time.monotonic() + 30
while not os.path.exists(add) and time.monotonic() < deadline:
    time.sleep(0.01)
parents["values"]._modules["late"] = leaves[8]
print("ADDED", flush=True)
time.sleep(30)
)PY";

struct Pair {
  std::string parent_case;
  uint64_t parent = 0, child = 0;
  std::string name;
};

uint64_t hex_of(const std::string& text) { return std::stoull(text, nullptr, 16); }

// The script running under one interpreter, its lines read up to READY.
class ModuleTreeChild {
 public:
  explicit ModuleTreeChild(const std::string& python) {
    char dir_template[] = "/tmp/gpuprof_modattr_XXXXXX";
    dir_ = mkdtemp(dir_template);
    script_ = dir_ + "/tree.py";
    std::ofstream(script_) << kScript;
    pid_ = testing_support::start_python_script(python, script_, &out_);
    while (out_) {
      const std::string line = next_line();
      if (line.empty() || line == "READY") {
        ready_ = !line.empty();
        break;
      }
      std::istringstream in(line);
      std::string tag, a, b, c, d;
      in >> tag >> a >> b;
      if (tag == "FORM") {
        forms_[a] = b;
      } else if (tag == "PAIR") {
        in >> c;
        std::getline(in >> std::ws, d);
        pairs_.push_back({a, hex_of(b), hex_of(c), d});
      } else if (tag == "STRANGER") {
        stranger_ = {"values", hex_of(a), hex_of(b), ""};
      } else if (tag == "LONG") {
        long_name_ = {"unicode", hex_of(a), hex_of(b), ""};
      }
    }
  }
  ~ModuleTreeChild() {
    if (out_) fclose(out_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove((dir_ + "/add").c_str());
    unlink(script_.c_str());
    rmdir(dir_.c_str());
  }
  // Lets the script add a child ("late") to the "values" parent; true once it has.
  bool add_late_child() {
    std::ofstream(dir_ + "/add") << "";
    return next_line() == "ADDED";
  }
  std::string next_line() {
    char* line = nullptr;
    size_t cap = 0;
    std::string s;
    if (getline(&line, &cap, out_) > 0) s = line;
    free(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }
  const std::map<std::string, std::string>& forms() const { return forms_; }
  const std::vector<Pair>& pairs() const { return pairs_; }
  const Pair& stranger() const { return stranger_; }
  const Pair& long_name() const { return long_name_; }

 private:
  std::string dir_, script_;
  FILE* out_ = nullptr;
  pid_t pid_ = -1;
  bool ready_ = false;
  std::map<std::string, std::string> forms_;
  std::vector<Pair> pairs_;
  Pair stranger_, long_name_;
};

// By minor version; 0 = Debian's /usr/bin/python3.
class ModuleAttributesLive : public ::testing::TestWithParam<int> {};

TEST_P(ModuleAttributesLive, NamesEveryChildInEveryFormOfDict) {
  const std::string python = GetParam() ? testing_support::pyenv_python(GetParam()) : testing_support::kDebianPython;
  ASSERT_FALSE(python.empty()) << "no pyenv CPython 3." << GetParam() << " under /root/.pyenv/versions";
  ModuleTreeChild child(python);
  ASSERT_TRUE(child.ready()) << python << " did not run the script";
  // Each parent keeps its attributes in the form its case is named for.
  const std::map<std::string, std::string> expected_forms = {
      {"values", "values"},     {"split", "split"},           {"general", "combined"},
      {"unicode", "combined"}, {"dictoffset", "dictoffset"}, {"twice", "values"}};
  EXPECT_EQ(child.forms(), expected_forms);
  ASSERT_EQ(child.pairs().size(), 9u);

  auto runtime = find_python_runtime(child.pid());
  ASSERT_TRUE(runtime) << runtime.error();
  ModuleAttributes attributes(child.pid(), runtime->offsets);
  for (const Pair& pair : child.pairs()) {
    EXPECT_EQ(attributes.child_name(pair.parent, pair.child), pair.name) << pair.parent_case;
  }
  EXPECT_EQ(attributes.child_name(child.stranger().parent, child.stranger().child), std::nullopt);
  // A key past kMaxNameLength is not read: its child has no name.
  EXPECT_EQ(attributes.child_name(child.long_name().parent, child.long_name().child), std::nullopt);
  // What is no module: a str, an unmapped address, an unaligned one.
  const uint64_t parent = child.pairs()[0].parent, leaf = child.pairs()[0].child;
  EXPECT_EQ(attributes.child_name(leaf, parent), std::nullopt);
  EXPECT_EQ(attributes.child_name(0x7ff000000000, leaf), std::nullopt);
  EXPECT_EQ(attributes.child_name(parent + 4, leaf), std::nullopt);

  // A child added after the parent was read is found (read again once).
  ASSERT_TRUE(child.add_late_child());
  EXPECT_EQ(attributes.child_name(child.stranger().parent, child.stranger().child), "late");
  EXPECT_EQ(attributes.child_name(parent, leaf), "conv1");
  // The target is unharmed.
  EXPECT_EQ(kill(child.pid(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Versions, ModuleAttributesLive, testing::Values(0, 11, 12, 13),
                         [](const testing::TestParamInfo<int>& info) {
                           return info.param ? "Pyenv3" + std::to_string(info.param) : std::string("Debian311");
                         });

}  // namespace
}  // namespace gpuprof
