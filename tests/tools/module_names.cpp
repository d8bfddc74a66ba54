// module_names: the attribute names under which modules of a running
// Python process hold their children, as ModuleAttributes reads them
// (python/module_attributes.h), for tests/integration/test_module_attributes.py.
//
// Usage: module_names PID PARENT:CHILD...
// PARENT and CHILD are object addresses in hex (id() of the modules, with
// or without 0x). Prints one line per pair, "PARENT:CHILD NAME" or
// "PARENT:CHILD not found", and exits 0; exits 1 when the process has no
// CPython this reads, 2 on bad arguments.
#include "python/module_attributes.h"
#include "python/python_runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

bool parse_hex(const std::string& text, uint64_t* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *value = std::strtoull(text.c_str(), &end, 16);
  return errno == 0 && end && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PID PARENT:CHILD... (addresses in hex)\n", argv[0]);
    return 2;
  }
  char* end = nullptr;
  const long pid = std::strtol(argv[1], &end, 10);
  if (!end || *end || pid <= 0) {
    std::fprintf(stderr, "module_names: '%s' is not a process id\n", argv[1]);
    return 2;
  }
  auto runtime = gpuprof::find_python_runtime(static_cast<int>(pid));
  if (!runtime) {
    std::fprintf(stderr, "module_names: no CPython in process %ld: %s\n", pid, runtime.error().c_str());
    return 1;
  }
  gpuprof::ModuleAttributes attributes(static_cast<int>(pid), runtime->offsets);
  for (int i = 2; i < argc; ++i) {
    const std::string pair = argv[i];
    const size_t colon = pair.find(':');
    uint64_t parent = 0, child = 0;
    if (colon == std::string::npos || !parse_hex(pair.substr(0, colon), &parent) ||
        !parse_hex(pair.substr(colon + 1), &child)) {
      std::fprintf(stderr, "module_names: '%s' is not PARENT:CHILD in hex\n", argv[i]);
      return 2;
    }
    auto name = attributes.child_name(parent, child);
    std::printf("%s %s\n", argv[i], name ? name->c_str() : "not found");
  }
  return 0;
}
