// process_memory.cpp: read_process_memory, write_process_memory (process_memory.h).
#include "target/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "base/unique_fd.h"

namespace gpuprof {
namespace {

// One pread or pwrite of the whole range through /proc/PID/mem.
Result<void> transfer(int pid, uint64_t address, void* bytes, size_t size, bool write) {
  const std::string path = "/proc/" + std::to_string(pid) + "/mem";
  UniqueFd fd(open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC));
  if (fd.get() < 0) return Error("cannot open " + path + ": " + std::strerror(errno));
  const off_t offset = static_cast<off_t>(address);
  const ssize_t done = write ? pwrite(fd.get(), bytes, size, offset) : pread(fd.get(), bytes, size, offset);
  if (done == static_cast<ssize_t>(size)) return {};
  char at[20] = "0x";
  *std::to_chars(at + 2, at + sizeof(at) - 1, address, 16).ptr = 0;
  return Error(std::string("cannot ") + (write ? "write " : "read ") + std::to_string(size) + " bytes at " + at +
               " of process " + std::to_string(pid) + ": " + (done < 0 ? std::strerror(errno) : "cut short"));
}

}  // namespace

Result<void> read_process_memory(int pid, uint64_t address, std::span<uint8_t> bytes) {
  return transfer(pid, address, bytes.data(), bytes.size(), false);
}

Result<void> write_process_memory(int pid, uint64_t address, std::span<const uint8_t> bytes) {
  return transfer(pid, address, const_cast<uint8_t*>(bytes.data()), bytes.size(), true);
}

}  // namespace gpuprof
