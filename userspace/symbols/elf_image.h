// elf_image.h: read-only view of an ELF shared library through libelf.
//
// What the loader needs from libtorch and libstdc++: function symbols with
// their sizes, the bytes of a function body, virtual-address to file-offset
// translation (uprobes take FILE offsets), the NUL-terminated strings of
// .rodata (libtorch's operator schemas), and the GNU build-id.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace gpuprof {

struct ElfSymbol {
  std::string_view name;  // points into the mapped file; valid while the ElfImage lives
  uint64_t address = 0;   // st_value (virtual address)
  uint64_t size = 0;      // st_size
};

class ElfImage {
 public:
  // Maps the file read-only and shared (its true bytes, whoever probes it).
  // An error if it cannot be opened or is not a 64-bit ELF file.
  static Result<ElfImage> open(const std::string& path);

  ElfImage(ElfImage&&) noexcept;
  ElfImage& operator=(ElfImage&&) noexcept;
  ~ElfImage();

  const std::string& path() const { return path_; }

  // Calls fn for every defined function symbol of .dynsym and .symtab (a
  // symbol present in both is reported twice; callers dedupe by address).
  void for_each_function(const std::function<void(const ElfSymbol&)>& fn) const;

  // Calls fn(symbol, is_function) for every defined symbol of .dynsym and
  // .symtab that is a function (STT_FUNC) or data (STT_OBJECT: vtables...).
  void for_each_code_or_data_symbol(const std::function<void(const ElfSymbol&, bool is_function)>& fn) const;

  // st_value of the defined symbol (any type) with this name, from
  // .symtab or .dynsym; nullopt when there is none.
  std::optional<uint64_t> symbol_value(std::string_view name) const;

  // File offset of a virtual address inside an allocated section, or nullopt.
  std::optional<uint64_t> file_offset(uint64_t address) const;

  // The file bytes of [address, address + size), or an empty span when the
  // range is not wholly inside one PROGBITS section.
  std::span<const uint8_t> bytes_at(uint64_t address, uint64_t size) const;

  // Calls fn for every NUL-terminated printable string of at least min_len
  // characters in the named section (e.g. ".rodata").
  void for_each_string(const char* section, size_t min_len,
                       const std::function<void(std::string_view)>& fn) const;

  // The virtual address and size of the named section; nullopt when absent.
  std::optional<std::pair<uint64_t, uint64_t>> section(const char* name) const;

  // The virtual address (page-aligned) of the PT_LOAD segment at file
  // offset 0: where a mapping of offset 0 puts address 0 of the file is
  // its start minus this. nullopt when the file has no such segment.
  std::optional<uint64_t> first_load_address() const;

  // Hex GNU build-id, "" when the file has none.
  std::string build_id() const;

  // The file ranges [offset, offset + file size) of the executable PT_LOAD
  // segments: what a mapping of the file runs as code.
  std::vector<std::pair<uint64_t, uint64_t>> executable_segment_file_ranges() const;

 private:
  struct State;
  // fn(symbol, ELF symbol type) for every defined, named symbol of .symtab
  // and .dynsym, until it returns true.
  void for_each_symbol(const std::function<bool(const ElfSymbol&, uint8_t type)>& fn) const;
  explicit ElfImage(std::unique_ptr<State> state, std::string path);
  std::unique_ptr<State> state_;
  std::string path_;
};

}  // namespace gpuprof
