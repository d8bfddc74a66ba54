// native_symbolizer_test.cpp: addresses of this very process to frames.
#include "symbols/native_symbolizer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace gpuprof {
namespace nsym_test {

// Known symbols of this binary, kept out of line and not folded away.
__attribute__((noinline)) int plain_function(int x, const char* y) {
  asm volatile("" ::: "memory");
  return x + (y ? y[0] : 0);
}

template <typename T>
__attribute__((noinline)) T template_function(T x) {
  asm volatile("" ::: "memory");
  return x * 3;
}
template long template_function<long>(long);

struct Widget {
  __attribute__((noinline)) int method(int x) const;
};
int Widget::method(int x) const {
  asm volatile("" ::: "memory");
  return x + 7;
}

}  // namespace nsym_test

namespace {

uint64_t addr_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

// This executable's base name, as /proc/self/maps names it.
std::string self_base_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(path.rfind('/') + 1);
}

TEST(NativeSymbolizerShortName, StripsParametersQualifiersAndReturnType) {
  EXPECT_EQ(short_function_name("ns::f(int, char)"), "ns::f");
  EXPECT_EQ(short_function_name("ns::C::get() const"), "ns::C::get");
  EXPECT_EQ(short_function_name("ns::C::get() const &&"), "ns::C::get");
  EXPECT_EQ(short_function_name("int ns::f<int>(int)"), "ns::f<int>");
  EXPECT_EQ(short_function_name("std::vector<int, std::allocator<int> > ns::make<int>(unsigned long)"),
            "ns::make<int>");
  EXPECT_EQ(short_function_name("ns::f<void (*)(int), 3>(void (*)(int))"), "ns::f<void (*)(int), 3>");
  EXPECT_EQ(short_function_name("(anonymous namespace)::g(int) [clone .cold]"), "(anonymous namespace)::g");
  EXPECT_EQ(short_function_name("ns::h(int)::{lambda()#1}::operator()() const"),
            "ns::h(int)::{lambda()#1}::operator()");
  EXPECT_EQ(short_function_name("ns::A::operator<(ns::A const&) const"), "ns::A::operator<");
  EXPECT_EQ(short_function_name("std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char const*)"),
            "std::operator<< <std::char_traits<char> >");
  EXPECT_EQ(short_function_name("ns::A::operator->() const"), "ns::A::operator->");
  EXPECT_EQ(short_function_name("ns::A::operator bool() const"), "ns::A::operator bool");
  EXPECT_EQ(short_function_name("ns::A::operator unsigned long() const"), "ns::A::operator unsigned long");
  EXPECT_EQ(short_function_name("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(short_function_name("operator delete[](void*)"), "operator delete[]");
  EXPECT_EQ(short_function_name("std::__cxx11::basic_string<char>::_M_create(unsigned long&, unsigned long)"),
            "std::__cxx11::basic_string<char>::_M_create");
  EXPECT_EQ(short_function_name("foo[abi:cxx11](int)"), "foo[abi:cxx11]");
  EXPECT_EQ(short_function_name("memcpy"), "memcpy");
  EXPECT_EQ(short_function_name("_GLOBAL__sub_I_foo.cpp"), "_GLOBAL__sub_I_foo.cpp");
}

TEST(NativeSymbolizerShortName, DemanglesRealSymbols) {
  EXPECT_EQ(demangle_function_name("_ZN2at6native15addmm_impl_cpu_ERNS_6TensorERKS1_S4_S4_RKN3c106ScalarES8_"),
            "at::native::addmm_impl_cpu_");
  EXPECT_EQ(demangle_function_name("_ZNK3foo3barEv"), "foo::bar");
  EXPECT_EQ(demangle_function_name("_Z1fIiET_S0_"), "f<int>");
  EXPECT_EQ(demangle_function_name("_ZN12_GLOBAL__N_13bazEi.cold"), "(anonymous namespace)::baz");
  EXPECT_EQ(demangle_function_name("getpid"), "getpid");
}

TEST(NativeSymbolizer, FunctionOfThisBinary) {
  NativeSymbolizer sym(getpid());
  std::string exe = self_base_name();
  ASSERT_FALSE(exe.empty());
  // +1: a sampled IP lies inside the body, not on its first byte.
  EXPECT_EQ(sym.symbolize(addr_of(reinterpret_cast<const void*>(&nsym_test::plain_function)) + 1),
            exe + "!gpuprof::nsym_test::plain_function");
  EXPECT_EQ(sym.symbolize(addr_of(reinterpret_cast<const void*>(&nsym_test::template_function<long>)) + 1),
            exe + "!gpuprof::nsym_test::template_function<long>");
  auto method = &nsym_test::Widget::method;
  void* method_addr;
  static_assert(sizeof(method) >= sizeof(method_addr));
  std::memcpy(&method_addr, &method, sizeof method_addr);  // non-virtual: the code address
  EXPECT_EQ(sym.symbolize(addr_of(method_addr)), exe + "!gpuprof::nsym_test::Widget::method");
  // Same address again: served from the cache, same answer.
  EXPECT_EQ(sym.symbolize(addr_of(method_addr)), exe + "!gpuprof::nsym_test::Widget::method");
  EXPECT_EQ(sym.maps_reads(), 1);
}

TEST(NativeSymbolizer, LibcFunction) {
  NativeSymbolizer sym(getpid());
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  void* getpid_addr = dlsym(handle, "getpid");
  void* memcpy_addr = dlsym(handle, "memcpy");  // an IFUNC: resolves to an implementation
  dlclose(handle);
  ASSERT_NE(getpid_addr, nullptr);
  std::string frame = sym.symbolize(addr_of(getpid_addr) + 2);
  EXPECT_TRUE(frame == "libc.so.6!getpid" || frame == "libc.so.6!__getpid") << frame;
  ASSERT_NE(memcpy_addr, nullptr);
  std::string mframe = sym.symbolize(addr_of(memcpy_addr));
  EXPECT_TRUE(mframe.starts_with("libc.so.6!") || mframe.starts_with("libc.so.6+0x")) << mframe;
}

TEST(NativeSymbolizer, StackHeapAndUnmappedAreUnknown) {
  NativeSymbolizer sym(getpid(), std::chrono::milliseconds(0));
  EXPECT_EQ(sym.symbolize(0), "[unknown]");  // never mapped: outside every mapping
  int reads = sym.maps_reads();
  void* anon = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  // Mapped after the first read of maps: found on the re-read, anonymous:
  // code running there is JIT code, made executable after it was written.
  EXPECT_EQ(sym.symbolize(addr_of(anon) + 100), "[jit]");
  EXPECT_EQ(sym.maps_reads(), reads + 1);
  int on_stack = 0;
  EXPECT_EQ(sym.symbolize(addr_of(&on_stack)), "[unknown]");
  void* heap = std::malloc(64);
  EXPECT_EQ(sym.symbolize(addr_of(heap)), "[unknown]");
  std::free(heap);
  munmap(anon, 8192);
}

// Anonymous memory that runs is JIT code (oneDNN's convolution kernels):
// "[jit]", named from /tmp/perf-PID.map when the process writes one.
TEST(NativeSymbolizer, AnonymousExecutableMemoryIsJit) {
  void* code = mmap(nullptr, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  const std::string map_path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::remove(map_path.c_str());
  {
    NativeSymbolizer sym(getpid(), std::chrono::milliseconds(0));
    EXPECT_EQ(sym.symbolize(addr_of(code) + 100), "[jit]");
  }
  {
    std::ofstream map(map_path);
    char line[128];
    std::snprintf(line, sizeof line, "%lx 100 jit_conv_kernel_f32\n%lx 40 jit_pool\n",
                  static_cast<unsigned long>(addr_of(code)), static_cast<unsigned long>(addr_of(code) + 0x1000));
    map << line << "not a line\n";
  }
  NativeSymbolizer sym(getpid(), std::chrono::milliseconds(0));
  EXPECT_EQ(sym.symbolize(addr_of(code) + 0x10), "[jit] jit_conv_kernel_f32");
  EXPECT_EQ(sym.symbolize(addr_of(code) + 0x1020), "[jit] jit_pool");
  EXPECT_EQ(sym.symbolize(addr_of(code) + 0x200), "[jit]");  // between the map's functions
  std::remove(map_path.c_str());
  munmap(code, 8192);
}

TEST(NativeSymbolizer, RereadsOfMapsAreRateLimited) {
  NativeSymbolizer sym(getpid(), std::chrono::hours(1));
  EXPECT_EQ(sym.symbolize(0), "[unknown]");
  EXPECT_EQ(sym.symbolize(8), "[unknown]");
  EXPECT_EQ(sym.symbolize(16), "[unknown]");
  EXPECT_EQ(sym.maps_reads(), 1);
}

// dl_iterate_phdr callback: the load base of the main executable.
int find_exe_base(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') {
    *static_cast<uint64_t*>(data) = info->dlpi_addr;
    return 1;
  }
  return 0;
}

TEST(NativeSymbolizer, NoSymbolGivesFileOffset) {
  NativeSymbolizer sym(getpid());
  // The ELF header at the start of the executable: mapped, but no function covers it.
  uint64_t base = 0;
  dl_iterate_phdr(find_exe_base, &base);
  std::string exe = self_base_name();
  if (base != 0) {  // PIE; a fixed-address executable starts elsewhere
    EXPECT_EQ(sym.symbolize(base + 0x10), exe + "+0x10");
  }
  // Same for libc's header; libc has only .dynsym, internal code is "stripped".
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  link_map* lm = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &lm), 0);
  uint64_t libc_base = lm->l_addr;
  dlclose(handle);
  EXPECT_EQ(sym.symbolize(libc_base + 0x40), "libc.so.6+0x40");
}

TEST(NativeSymbolizer, UnreadableFileGivesNamePlusOffset) {
  char path[] = "/tmp/nsym_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string contents(3 * 4096, 'x');  // not an ELF file
  ASSERT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  void* map = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 4096);
  ASSERT_NE(map, MAP_FAILED);
  NativeSymbolizer sym(getpid());
  std::string name = std::string(path).substr(5);
  EXPECT_EQ(sym.symbolize(addr_of(map) + 0x123), name + "+0x1123");
  // Deleted while mapped: "(deleted)" is not part of the name.
  munmap(map, 8192);
  unlink(path);
  void* again = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(again, MAP_FAILED);
  NativeSymbolizer sym2(getpid());
  EXPECT_EQ(sym2.symbolize(addr_of(again) + 0x10), name + "+0x10");
  munmap(again, 4096);
  close(fd);
}

TEST(NativeSymbolizer, BadPidNeverThrows) {
  NativeSymbolizer sym(-1);
  EXPECT_EQ(sym.symbolize(0x1234), "[unknown]");
  NativeSymbolizer moved = std::move(sym);
  EXPECT_EQ(moved.symbolize(0x1234), "[unknown]");
}

}  // namespace
}  // namespace gpuprof
