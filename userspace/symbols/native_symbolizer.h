// native_symbolizer.h: native instruction addresses of a live process to
// short "file!function" frames for flame graphs.
//
//   "libtorch_cpu.so.1.13.0!at::native::addmm_impl_cpu_"  a symbol covers it
//   "libfoo.so+0x1234"                                    a file maps it, no symbol covers it
//   "[jit] name", "[jit]"                                 anonymous memory: JIT code
//                                                         (oneDNN's kernels), named from
//                                                         /tmp/perf-PID.map when the process
//                                                         writes one (perf's convention)
//   "[vdso]"                                              the kernel's vDSO (clock_gettime)
//   "[unknown]"                                           no file maps it ([heap], [stack],
//                                                         unmapped)
//
// Function names are demangled (abi::__cxa_demangle) and shortened by
// short_function_name(): no parameter list, no trailing qualifiers or
// "[clone .cold]" suffix, no template return type; template arguments stay.
//
// The "+0x" offset is the ELF virtual address of the instruction (what
// `addr2line -e FILE` and `objdump` take) when the file's program headers
// could be read, else the offset in the file.
//
// Addresses to files: /proc/PID/maps, read on the first symbolize() and read
// again when an address lies outside every known mapping (libraries are
// loaded late), at most once per min_reread_interval. Files are opened as
// target_maps.h finds them (chroots and containers), by their path once the
// target is gone.
// Runtime address -> file offset (through the mapping) -> ELF virtual address
// (through the PT_LOAD segment holding that file offset).
//
// Which symbol covers an address: a symbol of .symtab or .dynsym of type
// FUNC whose [value, value + size) holds it (the innermost / latest-starting
// one when sized symbols nest). When none does, a symbol of size 0 (hand
// written assembly) covers the addresses from its value up to the next
// symbol, provided they are in the same section as the symbol. Several names
// at one address (aliases such as getpid / __getpid): the sized one, then the
// one with fewest leading underscores, then the shortest, then the first in
// byte order.
//
// Results of mapped addresses are cached per address; per file, the ELF
// image stays mapped and its sorted symbol table is kept. Never throws.
// Not thread-safe: one symbolizer per thread, or lock around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "symbols/target_maps.h"

namespace gpuprof {

// A demangled C++ name (or a plain C name) shortened for a flame-graph frame:
// "void ns::f<int>(int, char) const" -> "ns::f<int>",
// "(anonymous namespace)::g(int) [clone .cold]" -> "(anonymous namespace)::g",
// "ns::h(int)::{lambda()#1}::operator()() const" -> "ns::h(int)::{lambda()#1}::operator()".
// Names without a parameter list come back unchanged.
std::string short_function_name(std::string_view demangled);

// short_function_name(demangle(symbol)), the raw symbol when it does not demangle.
std::string demangle_function_name(std::string_view symbol);
// The whole demangled name, the raw symbol when it does not demangle.
std::string demangle_full(std::string_view symbol);

class NativeSymbolizer {
 public:
  explicit NativeSymbolizer(int pid,
                            std::chrono::milliseconds min_reread_interval = std::chrono::seconds(1));
  ~NativeSymbolizer();
  NativeSymbolizer(NativeSymbolizer&&) noexcept;
  NativeSymbolizer& operator=(NativeSymbolizer&&) noexcept;

  std::string symbolize(uint64_t address);

  // The whole demangled name ("void ns::kernel<float>(float*, int)") of
  // the function that starts exactly at address, as a call through a
  // function pointer gives it (CUDA kernels' host stubs); nullopt when no
  // symbol starts there. Reads the maps again when the address is outside
  // them. Not cached (the caller interns).
  std::optional<std::string> function_starting_at(uint64_t address);

  // The files opened to name addresses since the last call (each once):
  // its path as the maps give it and its hex GNU build id ("" when it has
  // none or could not be read), for the record's NATIVE_FILES.
  struct OpenedFile {
    std::string path;
    std::string build_id;
  };
  std::vector<OpenedFile> take_opened_files() { return std::exchange(opened_files_, {}); }
  int pid() const { return pid_; }

  // Reads /proc/PID/maps now (while the target lives: once it has exited,
  // the last mappings read stay, and its files are opened by their path).
  void refresh_maps() { read_maps(); }

  // How many times /proc/PID/maps has been read (for tests and diagnostics).
  int maps_reads() const { return maps_reads_; }

 private:
  struct FileSymbols;

  bool read_maps();
  const MapsEntry* find_mapping(uint64_t address) const;
  FileSymbols& file_symbols(const MapsEntry& mapping);
  std::string symbolize_uncached(uint64_t address);
  void read_jit_map();
  std::string jit_name(uint64_t address) const;

  int pid_;
  std::chrono::milliseconds min_reread_interval_;
  std::chrono::steady_clock::time_point last_read_{};
  bool maps_read_ = false;
  int maps_reads_ = 0;
  std::vector<MapsEntry> mappings_;  // sorted by start
  std::unordered_map<std::string, std::unique_ptr<FileSymbols>> files_;
  std::unordered_map<uint64_t, std::string> cache_;
  struct JitSymbol {
    uint64_t start, end;
    std::string name;
  };
  std::vector<JitSymbol> jit_symbols_;  // /tmp/perf-PID.map, sorted by start
  std::unordered_set<uint64_t> unmapped_pages_;  // pages of addresses no mapping held
  std::vector<OpenedFile> opened_files_;         // not yet taken
};

}  // namespace gpuprof
