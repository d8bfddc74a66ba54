// PythonCodeResolver against a live Debian /usr/bin/python3 (CPython 3.11):
// the child reports each code object's address (id()) and, from co_lines(),
// the line of every code unit; the resolver must agree reading its memory.
#include "interpreters.h"
#include "python/python_code.h"
#include "python/python_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace gpuprof {
namespace {


constexpr const char* kScript = R"PY(import sys
def simple(a, b):
    c = a + b
    return c * 2

def multi(x):
    total = 0
    for i in range(x):
        if i % 2:
            total += i
        else:
            total -= (i *
                      2)
    while total > 100:
        total //= 3
    return total

def outer(n):
    def inner(k):
        return [k + j for j in range(n)]
    return inner(n)

lam = lambda v: (v +
    1)

class Klass:
    def method(self):
        try:
            return 1 / 0
        except ZeroDivisionError:
            return None

def grüße():
    return "latin-1 name"

def 関数():
    return "UCS-2 name"

def collect(code, out):
    out.append(code)
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            collect(c, out)

codes = []
for f in (simple, multi, outer, lam, Klass.method, grüße, 関数):
    collect(f.__code__, codes)
for c in codes:
    lines = []
    for start, end, line in c.co_lines():
        for off in range(start, end, 2):
            lines.append("%d:%d" % (off // 2, -1 if line is None else line))
    print(id(c), c.co_filename, c.co_name, c.co_qualname, c.co_firstlineno,
          len(c.co_code) // 2, ",".join(lines), sep="\t")
print("READY", flush=True)
import time; time.sleep(30)
)PY";

struct CodeFacts {
  uint64_t address = 0;
  std::string filename, name, qualname;
  int firstlineno = 0;
  int64_t units = 0;
  std::vector<std::pair<int64_t, int>> lines;  // code unit -> line
};

class PythonChild {
 public:
  explicit PythonChild(const std::string& python) {
    char dir_template[] = "/tmp/gpuprof_pycode_XXXXXX";
    dir_ = mkdtemp(dir_template);
    script_ = dir_ + "/prog.py";
    std::ofstream(script_) << kScript;
    FILE* in = nullptr;
    pid_ = testing_support::start_python_script(python, script_, &in);
    if (!in) return;
    char* line = nullptr;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      if (s == "READY") {
        ready_ = true;
        break;
      }
      std::vector<std::string> f;
      std::stringstream ss(s);
      std::string field;
      while (std::getline(ss, field, '\t')) f.push_back(field);
      if (f.size() != 7) continue;
      CodeFacts c;
      c.address = std::stoull(f[0]);
      c.filename = f[1];
      c.name = f[2];
      c.qualname = f[3];
      c.firstlineno = std::stoi(f[4]);
      c.units = std::stoll(f[5]);
      std::stringstream ls(f[6]);
      std::string pair;
      while (std::getline(ls, pair, ',')) {
        size_t colon = pair.find(':');
        c.lines.emplace_back(std::stoll(pair.substr(0, colon)), std::stoi(pair.substr(colon + 1)));
      }
      codes_.push_back(std::move(c));
    }
    free(line);
    fclose(in);
  }
  ~PythonChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(script_.c_str());
    rmdir(dir_.c_str());
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }
  const std::vector<CodeFacts>& codes() const { return codes_; }
  const std::string& script() const { return script_; }

 private:
  std::string dir_, script_;
  pid_t pid_ = -1;
  bool ready_ = false;
  std::vector<CodeFacts> codes_;
};

}  // namespace

TEST(PythonCode, LineTableFormsByHand) {
  // short form (code 0, 2 units), one-line +1 (code 11, 1 unit),
  // no-column -2 (code 13, svarint 5), no location (code 15, 1 unit),
  // long form +3 (code 14, svarint 6; end line, col, end col).
  const uint8_t table[] = {0x80 | (0 << 3) | 1, 0x05,
                           0x80 | (11 << 3) | 0, 0x04, 0x09,
                           0x80 | (13 << 3) | 0, 0x05,
                           0x80 | (15 << 3) | 0,
                           0x80 | (14 << 3) | 0, 0x06, 0x00, 0x01, 0x05};
  std::span<const uint8_t> t(table);
  EXPECT_EQ(python_line_for_index(t, 10, -1), 10);
  EXPECT_EQ(python_line_for_index(t, 10, 0), 10);
  EXPECT_EQ(python_line_for_index(t, 10, 1), 10);
  EXPECT_EQ(python_line_for_index(t, 10, 2), 11);
  EXPECT_EQ(python_line_for_index(t, 10, 3), 9);
  EXPECT_EQ(python_line_for_index(t, 10, 4), -1);
  EXPECT_EQ(python_line_for_index(t, 10, 5), 12);
  EXPECT_EQ(python_line_for_index(t, 10, 6), -1);
  // Truncated entry: no crash, -1.
  EXPECT_EQ(python_line_for_index(t.first(10), 10, 5), -1);
}

// A corrupt table whose line deltas sum past an int (fuzzer-found, UB
// before: tests/fuzz/regressions/symbol_parsers/linetable_line_overflow):
// no line, not a wrapped one.
TEST(PythonCode, LineTableDeltasPastIntAreNoLine) {
  // No-column entries (code 13) of +2^29 - 1 (svarint 2^30 - 2:
  // five varint bytes) each: the fifth takes the running line past INT_MAX.
  std::vector<uint8_t> table;
  for (int i = 0; i < 5; i++) {
    table.push_back(0x80 | (13 << 3) | 0);
    for (uint8_t b : {0x7e, 0x7f, 0x7f, 0x7f, 0x3f}) table.push_back(b);  // 6 bits a byte, low first
  }
  std::span<const uint8_t> t(table);
  EXPECT_EQ(python_line_for_index(t, 1, 0), 1 + (1 << 29) - 1);
  EXPECT_EQ(python_line_for_index(t, 1, 3), 1 + 4 * ((1 << 29) - 1));
  EXPECT_EQ(python_line_for_index(t, 1, 4), -1);
  EXPECT_EQ(python_line_for_index(t, INT32_MAX, 0), -1);
}

// Against co_lines() of Debian's 3.11 and the pyenv 3.12 and 3.13 of this
// machine's image (by minor version; 0 = Debian's).
class PythonCodeLive : public ::testing::TestWithParam<int> {};

TEST_P(PythonCodeLive, MatchesCoLines) {
  const std::string python =
      GetParam() ? testing_support::pyenv_python(GetParam()) : testing_support::kDebianPython;
  ASSERT_FALSE(python.empty()) << "no pyenv CPython 3." << GetParam();
  ASSERT_EQ(access(python.c_str(), X_OK), 0) << python << " missing: run scripts/setup.sh";
  PythonChild child(python);
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.ready());
  // 7 functions + inner (+ the listcomp, its own code object before 3.12's PEP 709).
  ASSERT_GE(child.codes().size(), 8u);
  Result<PythonRuntime> rt = find_python_runtime(child.pid());
  for (int i = 1; i < 100 && !rt; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rt = find_python_runtime(child.pid());
  }
  ASSERT_TRUE(rt) << rt.error();
  ASSERT_EQ(rt->minor, GetParam() ? GetParam() : 11);
  PythonCodeResolver resolver(child.pid(), rt->offsets);
  const uint64_t bytecode = rt->offsets.code_bytecode;
  size_t checked = 0;
  std::vector<std::string> names;
  for (const CodeFacts& c : child.codes()) {
    SCOPED_TRACE(c.qualname);
    const PythonCodeInfo* info = resolver.code(c.address);
    ASSERT_TRUE(info);
    names.push_back(info->name);
    EXPECT_EQ(info->filename, child.script());
    EXPECT_EQ(info->name, c.name);
    EXPECT_EQ(info->qualname, c.qualname);
    EXPECT_EQ(info->firstlineno, c.firstlineno);
    ASSERT_EQ(int64_t(c.lines.size()), c.units);
    for (auto [unit, line] : c.lines) {
      uint64_t instr = c.address + bytecode + 2 * unit;
      EXPECT_EQ(resolver.line(c.address, instr), line) << "unit " << unit;
      auto text = resolver.frame(c.address, instr);
      ASSERT_TRUE(text);
      EXPECT_EQ(*text, c.filename + "(" + std::to_string(line) + "): " + c.name);
      ++checked;
    }
    // Before the first instruction (a fresh frame's prev_instr): firstlineno.
    EXPECT_EQ(resolver.line(c.address, c.address + bytecode - 2), c.firstlineno);
    // Past the end: no line.
    EXPECT_EQ(resolver.line(c.address, c.address + bytecode + 2 * c.units), -1);
  }
  EXPECT_GT(checked, 100u);
  auto has = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  EXPECT_TRUE(has("inner"));
  if (rt->minor == 11) {
    EXPECT_TRUE(has("<listcomp>"));
  }
  EXPECT_TRUE(has("<lambda>"));
  EXPECT_TRUE(has("method"));
  EXPECT_TRUE(has("grüße"));
  EXPECT_TRUE(has("関数"));
  // Multi-line expressions really produce several lines in one function.
  for (const CodeFacts& c : child.codes())
    if (c.name == "multi") {
      std::set<int> distinct;
      for (auto [u, l] : c.lines) distinct.insert(l);
      EXPECT_GE(distinct.size(), 8u);
    }
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonCodeLive, ::testing::Values(0, 12, 13),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param ? "Pyenv3" + std::to_string(info.param)
                                             : std::string("Debian311");
                         });

TEST(PythonCode, UnreadableCodeObject) {
  PythonCodeResolver resolver(getpid(), *python_offsets_for(3, 11));
  EXPECT_FALSE(resolver.frame(8, 16));
}

}  // namespace gpuprof
