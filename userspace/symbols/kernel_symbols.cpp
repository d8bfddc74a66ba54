#include "symbols/kernel_symbols.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace gpuprof {

KernelSymbols KernelSymbols::load() {
  std::ifstream in("/proc/kallsyms");
  if (!in) return {};
  return parse(in);
}

KernelSymbols KernelSymbols::parse(std::istream& in) {
  KernelSymbols table;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (!(fields >> address >> type >> name)) continue;
    // Only text (code) symbols: a stack holds return addresses in code.
    if (type != "t" && type != "T") continue;
    uint64_t value = std::strtoull(address.c_str(), nullptr, 16);
    if (value == 0) continue;  // addresses hidden by kptr_restrict
    table.symbols_.push_back({value, std::move(name)});
  }
  std::stable_sort(table.symbols_.begin(), table.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return table;
}

std::string KernelSymbols::name(uint64_t address) const {
  auto above = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (above == symbols_.begin()) return "";
  return std::prev(above)->name;
}

std::string KernelSymbols::frame(uint64_t address) const {
  std::string found = name(address);
  if (!found.empty()) return found + "_[k]";
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%llx_[k]", static_cast<unsigned long long>(address));
  return hex;
}

}  // namespace gpuprof
