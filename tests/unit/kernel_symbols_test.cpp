// kernel_symbols_test.cpp: kallsyms text -> names, and the live table.
#include "symbols/kernel_symbols.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpuprof {
namespace {

TEST(KernelSymbols, NearestTextSymbolAtOrBelow) {
  std::istringstream text(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000100 t helper\n"
      "ffffffff81000200 D some_data\n"  // data: not a frame
      "ffffffff81000300 T do_syscall_64\n"
      "ffffffffc0000000 t nf_hook\t[nf_tables]\n"
      "garbage line\n");
  KernelSymbols symbols = KernelSymbols::parse(text);
  EXPECT_EQ(symbols.size(), 4u);
  EXPECT_EQ(symbols.name(0xffffffff81000000), "_stext");
  EXPECT_EQ(symbols.name(0xffffffff810000ff), "_stext");
  EXPECT_EQ(symbols.name(0xffffffff81000250), "helper");
  EXPECT_EQ(symbols.name(0xffffffff81000301), "do_syscall_64");
  EXPECT_EQ(symbols.name(0xffffffffc0000010), "nf_hook");
  EXPECT_EQ(symbols.name(0x1000), "");
  EXPECT_EQ(symbols.frame(0xffffffff81000301), "do_syscall_64_[k]");
  EXPECT_EQ(symbols.frame(0x1000), "0x1000_[k]");
}

TEST(KernelSymbols, HiddenAddressesNameNothing) {
  std::istringstream text("0000000000000000 T _stext\n0000000000000000 T do_syscall_64\n");
  KernelSymbols symbols = KernelSymbols::parse(text);
  EXPECT_EQ(symbols.size(), 0u);
  EXPECT_EQ(symbols.frame(0xffffffff81000301), "0xffffffff81000301_[k]");
}

// As root (the tests run as root, like gpuprof), the live table names the
// kernel's own entry point.
TEST(KernelSymbols, LiveTableAsRoot) {
  KernelSymbols symbols = KernelSymbols::load();
  ASSERT_GT(symbols.size(), 1000u) << "/proc/kallsyms unreadable or addresses hidden: run as root";
  std::ifstream in("/proc/kallsyms");
  std::string address, type, name;
  uint64_t entry = 0;
  while (in >> address >> type >> name) {
    if (name == "do_syscall_64") entry = std::stoull(address, nullptr, 16);
    std::getline(in, address);
  }
  ASSERT_NE(entry, 0u);
  EXPECT_EQ(symbols.name(entry + 1), "do_syscall_64");
}

}  // namespace
}  // namespace gpuprof
