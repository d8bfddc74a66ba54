// kernel_symbols.h: kernel addresses -> function names, from /proc/kallsyms.
//
// For the kernel stacks of CPU samples. gpuprof runs as root, so kallsyms
// shows real addresses (kptr_restrict hides them from others: then every
// address has no name and prints as "0x..._[k]", never a wrong name).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace gpuprof {

class KernelSymbols {
 public:
  // Reads /proc/kallsyms; empty (every lookup misses) when unreadable.
  static KernelSymbols load();
  // From kallsyms-format text ("ffffffff81000000 T _stext [module]").
  static KernelSymbols parse(std::istream& in);

  // The function containing address: the text symbol at or below it;
  // "" when none (below the first symbol, or no symbols).
  std::string name(uint64_t address) const;
  // "name_[k]", or "0x..._[k]" when unnamed: a folded-stack frame, with the
  // suffix flamegraph.pl colours as kernel code (perf's stackcollapse
  // annotation).
  std::string frame(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  struct Symbol {
    uint64_t address;
    std::string name;
  };
  std::vector<Symbol> symbols_;  // text symbols, sorted by address
};

}  // namespace gpuprof
