// import_redirect.cpp: rewriting GOT slots (import_redirect.h).
#include "import_redirect.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace gpuprof_shim {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "import_redirect: only x86_64 and aarch64 relocations are known"
#endif

struct Request {
  const char* symbol;
  void* replacement;
  const void* skip_a;
  const void* skip_b;
  size_t redirected = 0;
};

bool contains(const dl_phdr_info* info, const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + p.p_vaddr;
    if (at >= begin && at < begin + p.p_memsz) return true;
  }
  return false;
}

// The loader adds the load address to the dynamic section's pointers of
// most objects in place; not to those of objects whose dynamic section is
// read-only (the vDSO). Either way the result is an address in the object.
uintptr_t dynamic_pointer(const dl_phdr_info* info, ElfW(Addr) value) {
  return value < info->dlpi_addr ? info->dlpi_addr + value : value;
}

struct Relocations {
  const ElfW(Rela)* table = nullptr;
  size_t bytes = 0;
};

// Stores `value` in `slot`. A slot in the RELRO range lies on a page the
// loader made read-only (it rounds the range's end down to a page: the
// last partial page stays writable): writable for the store only.
bool store(uintptr_t slot, void* value, uintptr_t relro_begin, uintptr_t relro_end) {
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t page = slot & ~(page_size - 1);
  const bool read_only = relro_begin != relro_end && page >= (relro_begin & ~(page_size - 1)) &&
                         page < (relro_end & ~(page_size - 1));
  if (read_only && mprotect(reinterpret_cast<void*>(page), page_size, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(reinterpret_cast<void**>(slot), value, __ATOMIC_SEQ_CST);
  if (read_only) mprotect(reinterpret_cast<void*>(page), page_size, PROT_READ);
  return true;
}

int redirect_in_object(dl_phdr_info* info, size_t, void* data) {
  auto& request = *static_cast<Request*>(data);
  if (contains(info, request.skip_a) || contains(info, request.skip_b)) return 0;
  const ElfW(Dyn)* dynamic = nullptr;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_DYNAMIC) dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + p.p_vaddr);
    if (p.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + p.p_vaddr;
      relro_end = relro_begin + p.p_memsz;
    }
  }
  if (!dynamic) return 0;
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  size_t names_bytes = 0;
  Relocations plt, data_relocations;
  bool plt_is_rela = true;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym)*>(dynamic_pointer(info, d->d_un.d_ptr)); break;
      case DT_STRTAB: names = reinterpret_cast<const char*>(dynamic_pointer(info, d->d_un.d_ptr)); break;
      case DT_STRSZ: names_bytes = d->d_un.d_val; break;
      case DT_JMPREL: plt.table = reinterpret_cast<const ElfW(Rela)*>(dynamic_pointer(info, d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: plt.bytes = d->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA:
        data_relocations.table = reinterpret_cast<const ElfW(Rela)*>(dynamic_pointer(info, d->d_un.d_ptr));
        break;
      case DT_RELASZ: data_relocations.bytes = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symbols || !names || !plt_is_rela) return 0;
  for (const Relocations& relocations : {plt, data_relocations}) {
    if (!relocations.table) continue;
    const size_t count = relocations.bytes / sizeof(ElfW(Rela));
    for (size_t i = 0; i < count; ++i) {
      const ElfW(Rela)& r = relocations.table[i];
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      const size_t symbol = ELF64_R_SYM(r.r_info);
      if ((type != kJumpSlot && type != kGlobDat) || symbol == 0) continue;
      const ElfW(Word) name = symbols[symbol].st_name;
      if (name >= names_bytes || std::strcmp(names + name, request.symbol) != 0) continue;
      const uintptr_t slot = info->dlpi_addr + r.r_offset;
      if (*reinterpret_cast<void* const*>(slot) == request.replacement) continue;
      if (store(slot, request.replacement, relro_begin, relro_end)) ++request.redirected;
    }
  }
  return 0;
}

int read_adds(dl_phdr_info* info, size_t size, void* data) {
  // dlpi_adds is there from glibc 2.4 on; size says whether this one has it.
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    *static_cast<unsigned long long*>(data) = info->dlpi_adds;
  return 1;  // the first object is enough: the counter is the loader's
}

}  // namespace

unsigned long long objects_loaded() {
  unsigned long long adds = 0;
  dl_iterate_phdr(read_adds, &adds);
  return adds;
}

size_t redirect_imports(const char* symbol, void* replacement, const void* skip_a, const void* skip_b) {
  Request request{symbol, replacement, skip_a, skip_b};
  // Under the loader's lock: no object comes or goes during the walk.
  dl_iterate_phdr(redirect_in_object, &request);
  return request.redirected;
}

}  // namespace gpuprof_shim
