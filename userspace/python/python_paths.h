// python_paths.h: source paths as torch.profiler prints them.
//
// torch's Python tracer prints a frame's file relative to the longest
// sys.path entry (plus site-packages, the user base and torch's parent
// directory) it starts with: "torch/nn/modules/conv.py", "train.py"
// (torch/profiler/python_tracer.py, _prefix_regex). gpuprof cannot ask the
// target for sys.path, so it rebuilds the entries that decide it from the
// outside: the script's directory (sys.path[0]) or the working directory
// (python -c / -m), PYTHONPATH, and any directory ending in site-packages,
// dist-packages or lib/pythonX.Y (the standard library). A path under none
// of them is printed whole, as torch does.
#pragma once

#include <string>
#include <vector>

namespace gpuprof {

class PythonPathShortener {
 public:
  PythonPathShortener() = default;
  // Explicit directories (absolute, without trailing '/'), tried besides
  // the site-packages / dist-packages / lib/pythonX.Y rule.
  explicit PythonPathShortener(std::vector<std::string> directories);

  // The directories for a running interpreter: its script's directory or
  // working directory, and PYTHONPATH, from /proc/PID/{cmdline,cwd,environ}.
  static PythonPathShortener for_process(int pid);

  // path without its longest matching directory prefix.
  std::string shorten(const std::string& path) const;

  const std::vector<std::string>& directories() const { return directories_; }

 private:
  std::vector<std::string> directories_;
};

// sys.path[0] for a python command line (argv, cwd of the process): the
// script's directory, or cwd for -c, -m, - and an interactive interpreter.
std::string python_sys_path0(const std::vector<std::string>& argv, const std::string& cwd);

}  // namespace gpuprof
