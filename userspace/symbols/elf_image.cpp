#include "symbols/elf_image.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuprof {

struct ElfImage::State {
  int fd = -1;
  const uint8_t* data = nullptr;
  size_t size = 0;
  Elf* elf = nullptr;

  ~State() {
    if (elf) elf_end(elf);
    if (data) munmap(const_cast<uint8_t*>(data), size);
    if (fd >= 0) close(fd);
  }

  template <typename Fn>
  void for_each_section(Fn&& fn) const {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      if (fn(scn, shdr)) return;
    }
  }

  std::string_view section_name(const GElf_Shdr& shdr) const {
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    return name ? std::string_view(name) : std::string_view();
  }
};

ElfImage::ElfImage(std::unique_ptr<State> state, std::string path)
    : state_(std::move(state)), path_(std::move(path)) {}
ElfImage::ElfImage(ElfImage&&) noexcept = default;
ElfImage& ElfImage::operator=(ElfImage&&) noexcept = default;
ElfImage::~ElfImage() = default;

Result<ElfImage> ElfImage::open(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return Error("libelf initialisation failed");
  auto state = std::make_unique<State>();
  state->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (state->fd < 0) return Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(state->fd, &st) != 0 || st.st_size <= 0) return Error(path + " is empty or unreadable");
  state->size = static_cast<size_t>(st.st_size);
  // MAP_SHARED, never MAP_PRIVATE: the kernel plants other sessions'
  // uprobe breakpoints (a pid-less link of `record -a`, bpftrace, perf
  // probe) in every private mapping of the file that may execute, gpuprof's
  // own included, so a private mapping can show int3 bytes where the code
  // is. Shared mappings are never probed: they show the file's true bytes.
  void* map = mmap(nullptr, state->size, PROT_READ, MAP_SHARED, state->fd, 0);
  if (map == MAP_FAILED) return Error("cannot map " + path + ": " + std::strerror(errno));
  state->data = static_cast<const uint8_t*>(map);
  state->elf = elf_memory(static_cast<char*>(map), state->size);
  if (!state->elf || elf_kind(state->elf) != ELF_K_ELF || gelf_getclass(state->elf) != ELFCLASS64)
    return Error(path + " is not a 64-bit ELF file");
  return ElfImage(std::move(state), path);
}

void ElfImage::for_each_symbol(const std::function<bool(const ElfSymbol&, uint8_t type)>& fn) const {
  state_->for_each_section([&](Elf_Scn* scn, const GElf_Shdr& shdr) {
    if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) return false;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || shdr.sh_entsize == 0) return false;
    size_t count = shdr.sh_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const char* name = elf_strptr(state_->elf, shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      if (fn(ElfSymbol{name, sym.st_value, sym.st_size}, GELF_ST_TYPE(sym.st_info))) return true;
    }
    return false;
  });
}

void ElfImage::for_each_function(const std::function<void(const ElfSymbol&)>& fn) const {
  for_each_symbol([&](const ElfSymbol& sym, uint8_t type) {
    if (type == STT_FUNC && sym.address != 0) fn(sym);
    return false;
  });
}

void ElfImage::for_each_code_or_data_symbol(
    const std::function<void(const ElfSymbol&, bool is_function)>& fn) const {
  for_each_symbol([&](const ElfSymbol& sym, uint8_t type) {
    if ((type == STT_FUNC || type == STT_OBJECT) && sym.address != 0) fn(sym, type == STT_FUNC);
    return false;
  });
}

std::optional<uint64_t> ElfImage::symbol_value(std::string_view wanted) const {
  std::optional<uint64_t> result;
  for_each_symbol([&](const ElfSymbol& sym, uint8_t) {
    if (sym.name != wanted) return false;
    result = sym.address;
    return true;
  });
  return result;
}

std::optional<uint64_t> ElfImage::file_offset(uint64_t address) const {
  std::optional<uint64_t> result;
  state_->for_each_section([&](Elf_Scn*, const GElf_Shdr& shdr) {
    if (!(shdr.sh_flags & SHF_ALLOC) || shdr.sh_type == SHT_NOBITS) return false;
    if (address >= shdr.sh_addr && address < shdr.sh_addr + shdr.sh_size) {
      result = address - shdr.sh_addr + shdr.sh_offset;
      return true;
    }
    return false;
  });
  return result;
}

std::span<const uint8_t> ElfImage::bytes_at(uint64_t address, uint64_t size) const {
  std::span<const uint8_t> result;
  state_->for_each_section([&](Elf_Scn*, const GElf_Shdr& shdr) {
    if (shdr.sh_type != SHT_PROGBITS || !(shdr.sh_flags & SHF_ALLOC)) return false;
    if (address < shdr.sh_addr || address + size > shdr.sh_addr + shdr.sh_size) return false;
    uint64_t offset = address - shdr.sh_addr + shdr.sh_offset;
    if (offset + size <= state_->size) result = {state_->data + offset, size};
    return true;
  });
  return result;
}

void ElfImage::for_each_string(const char* section, size_t min_len,
                               const std::function<void(std::string_view)>& fn) const {
  state_->for_each_section([&](Elf_Scn*, const GElf_Shdr& shdr) {
    if (state_->section_name(shdr) != section || shdr.sh_type != SHT_PROGBITS) return false;
    if (shdr.sh_offset + shdr.sh_size > state_->size) return true;
    const char* begin = reinterpret_cast<const char*>(state_->data + shdr.sh_offset);
    const char* end = begin + shdr.sh_size;
    const char* start = begin;
    for (const char* p = begin; p < end; p++) {
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == 0) {
        if (static_cast<size_t>(p - start) >= min_len) fn(std::string_view(start, p - start));
        start = p + 1;
      } else if (c < 0x20 || c >= 0x7f) {
        start = p + 1;  // not text: the string (if any) starts after it
      }
    }
    return true;
  });
}

std::optional<std::pair<uint64_t, uint64_t>> ElfImage::section(const char* name) const {
  std::optional<std::pair<uint64_t, uint64_t>> found;
  state_->for_each_section([&](Elf_Scn*, const GElf_Shdr& shdr) {
    if (state_->section_name(shdr) != name) return false;
    found = std::pair<uint64_t, uint64_t>{shdr.sh_addr, shdr.sh_size};
    return true;
  });
  return found;
}

std::optional<uint64_t> ElfImage::first_load_address() const {
  size_t count = 0;
  if (elf_getphdrnum(state_->elf, &count) != 0) return std::nullopt;
  for (size_t i = 0; i < count; i++) {
    GElf_Phdr phdr;
    if (gelf_getphdr(state_->elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD && phdr.p_offset == 0)
      return phdr.p_vaddr & ~uint64_t{0xfff};
  }
  return std::nullopt;
}

std::vector<std::pair<uint64_t, uint64_t>> ElfImage::executable_segment_file_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  size_t count = 0;
  if (elf_getphdrnum(state_->elf, &count) != 0) return ranges;
  for (size_t i = 0; i < count; i++) {
    GElf_Phdr phdr;
    if (gelf_getphdr(state_->elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD && (phdr.p_flags & PF_X))
      ranges.emplace_back(phdr.p_offset, phdr.p_offset + phdr.p_filesz);
  }
  return ranges;
}

std::string ElfImage::build_id() const {
  std::string hex;
  state_->for_each_section([&](Elf_Scn* scn, const GElf_Shdr& shdr) {
    if (shdr.sh_type != SHT_NOTE) return false;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) return false;
    size_t offset = 0, name_off, desc_off;
    GElf_Nhdr nhdr;
    while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
      if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
          std::memcmp(static_cast<const char*>(data->d_buf) + name_off, "GNU", 4) != 0)
        continue;
      static const char digits[] = "0123456789abcdef";
      const auto* id = static_cast<const uint8_t*>(data->d_buf) + desc_off;
      for (size_t i = 0; i < nhdr.n_descsz; i++) {
        hex += digits[id[i] >> 4];
        hex += digits[id[i] & 15];
      }
      return true;
    }
    return false;
  });
  return hex;
}

}  // namespace gpuprof
