#include "symbols/native_symbolizer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "symbols/elf_image.h"

namespace gpuprof {

namespace {

constexpr const char* kUnknown = "[unknown]";
constexpr const char* kJit = "[jit]";
// Bound on cached results; the cache is dropped whole when it is reached.
constexpr size_t kMaxCachedAddresses = 1 << 20;
// Unmapped pages remembered (the set is dropped whole past it).
constexpr size_t kMaxUnmappedPages = 4096;

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// s[i..] starts with the keyword "operator": the index just past the
// operator's symbol for the punctuation operators ("operator()",
// "operator<<", "operator->*", ...), just past "operator" for the others
// ("operator new", conversions such as "operator bool").
size_t skip_operator(std::string_view s, size_t i) {
  size_t j = i + 8;
  std::string_view rest = s.substr(j);
  if (rest.starts_with("()") || rest.starts_with("[]")) return j + 2;
  static constexpr std::string_view kPunct = "+-*/%^&|~!=<>,";
  size_t k = j;
  while (k < s.size() && kPunct.find(s[k]) != std::string_view::npos) k++;
  return k;
}

bool operator_keyword_at(std::string_view s, size_t i) {
  if (s.compare(i, 8, "operator") != 0) return false;
  if (i > 0 && is_ident(s[i - 1])) return false;
  return i + 8 >= s.size() || !is_ident(s[i + 8]);
}

std::string hex_offset(const std::string& base, uint64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "+0x%" PRIx64, offset);
  return base + buf;
}

std::string base_name(std::string_view path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.remove_suffix(kDeleted.size());
  size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  return std::string(path);
}

size_t leading_underscores(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && s[n] == '_') n++;
  return n;
}

}  // namespace

std::string short_function_name(std::string_view s) {
  // One pass at bracket depth 0: the last "(...)" group not followed by "::"
  // (and not "(anonymous namespace)") is the parameter list; the last space
  // before it that is not part of an operator name ends the return type.
  // '<' '>' are brackets except inside parentheses (template arguments such
  // as "(5)>(3)" are printed in parentheses by the demangler).
  std::vector<char> stack;
  std::vector<size_t> spaces;
  size_t params_open = std::string_view::npos;
  size_t group_open = std::string_view::npos;
  bool in_operator = false;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == 'o' && operator_keyword_at(s, i)) {
      if (stack.empty()) in_operator = true;
      i = skip_operator(s, i);
      continue;
    }
    switch (c) {
      case '(':
        if (stack.empty()) group_open = i;
        stack.push_back('(');
        break;
      case '[':
      case '{':
        stack.push_back(c);
        break;
      case '<':
        if (stack.empty() || stack.back() != '(') stack.push_back('<');
        break;
      case '>':
        if (!stack.empty() && stack.back() == '<') stack.pop_back();
        break;
      case ')':
      case ']':
      case '}': {
        char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        // Unbalanced '<' (a stray comparison) must not swallow the rest.
        while (!stack.empty() && stack.back() == '<' && open != '<') stack.pop_back();
        if (!stack.empty() && stack.back() == open) stack.pop_back();
        if (c == ')' && stack.empty() && group_open != std::string_view::npos) {
          bool scope = s.compare(i + 1, 2, "::") == 0;
          bool anon = s.substr(group_open).starts_with("(anonymous namespace)");
          if (!scope && !anon) params_open = group_open;
          group_open = std::string_view::npos;
        }
        break;
      }
      case ' ':
        if (stack.empty() && !in_operator) spaces.push_back(i);
        break;
      case ':':
        if (stack.empty() && i + 1 < s.size() && s[i + 1] == ':') in_operator = false;
        break;
      default:
        break;
    }
    i++;
  }
  if (params_open == std::string_view::npos) {
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return std::string(s);
  }
  std::string_view name = s.substr(0, params_open);
  size_t cut = std::string_view::npos;
  for (size_t sp : spaces)
    if (sp < params_open) cut = sp;
  if (cut != std::string_view::npos && cut + 1 < name.size()) name.remove_prefix(cut + 1);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (name.empty()) return std::string(s);
  return std::string(name);
}

std::string demangle_full(std::string_view symbol) {
  std::string mangled(symbol);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return mangled;
  return demangled.get();
}

std::string demangle_function_name(std::string_view symbol) {
  std::string full = demangle_full(symbol);
  if (full == symbol) return full;  // not a mangled name
  return short_function_name(full);
}

// Per file: the mapped ELF image (the symbol names point into it), its
// function symbols sorted by address, PT_LOAD segments and allocated sections.
struct NativeSymbolizer::FileSymbols {
  struct Symbol {
    uint64_t start;
    uint64_t size;
    std::string_view name;
  };
  struct Segment {
    uint64_t offset, filesz, vaddr;
  };
  struct Section {
    uint64_t addr, size;
  };

  std::string name;  // base name, for the frame
  std::optional<ElfImage> image;
  std::vector<Symbol> symbols;  // sorted by start, one per start
  std::vector<uint64_t> max_end;  // max_end[i] = max(start + size) over symbols[0..i]
  std::vector<Segment> loads;
  std::vector<Section> sections;

  // false when the file cannot be opened as ELF (nothing loaded).
  bool load(const std::string& file_path) {
    auto opened = ElfImage::open(file_path);
    if (!opened) {
      image.reset();
      return false;
    }
    image = std::move(opened).value();
    read_headers(file_path);
    image->for_each_function([&](const ElfSymbol& sym) {
      symbols.push_back(Symbol{sym.address, sym.size, sym.name});
    });
    std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) {
      if (a.start != b.start) return a.start < b.start;
      if ((a.size > 0) != (b.size > 0)) return a.size > 0;
      size_t ua = leading_underscores(a.name), ub = leading_underscores(b.name);
      if (ua != ub) return ua < ub;
      if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
      return a.name < b.name;
    });
    symbols.erase(std::unique(symbols.begin(), symbols.end(),
                              [](const Symbol& a, const Symbol& b) { return a.start == b.start; }),
                  symbols.end());
    symbols.shrink_to_fit();
    max_end.resize(symbols.size());
    uint64_t running = 0;
    for (size_t i = 0; i < symbols.size(); i++) {
      running = std::max(running, symbols[i].start + symbols[i].size);
      max_end[i] = running;
    }
    return true;
  }

  // Program headers and section headers through libelf on a second
  // descriptor (ElfImage does not expose them).
  void read_headers(const std::string& file_path) {
    int fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (elf_version(EV_CURRENT) == EV_NONE) {
      ::close(fd);
      return;
    }
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf && elf_kind(elf) == ELF_K_ELF) {
      size_t count = 0;
      if (elf_getphdrnum(elf, &count) == 0) {
        for (size_t i = 0; i < count; i++) {
          GElf_Phdr phdr;
          if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD) continue;
          loads.push_back(Segment{phdr.p_offset, phdr.p_filesz, phdr.p_vaddr});
        }
      }
      Elf_Scn* scn = nullptr;
      while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC) || shdr.sh_size == 0) continue;
        sections.push_back(Section{shdr.sh_addr, shdr.sh_size});
      }
    }
    if (elf) elf_end(elf);
    ::close(fd);
  }

  std::optional<uint64_t> vaddr_of_offset(uint64_t file_offset) const {
    for (const Segment& seg : loads)
      if (file_offset >= seg.offset && file_offset - seg.offset < seg.filesz)
        return file_offset - seg.offset + seg.vaddr;
    return std::nullopt;
  }

  const Section* section_of(uint64_t vaddr) const {
    for (const Section& sec : sections)
      if (vaddr >= sec.addr && vaddr - sec.addr < sec.size) return &sec;
    return nullptr;
  }

  const Symbol* lookup(uint64_t vaddr) const {
    auto it = std::upper_bound(symbols.begin(), symbols.end(), vaddr,
                               [](uint64_t v, const Symbol& s) { return v < s.start; });
    if (it == symbols.begin()) return nullptr;
    size_t idx = static_cast<size_t>(it - symbols.begin()) - 1;
    // Sized symbols first: walk back while an earlier symbol could still reach vaddr.
    for (size_t i = idx + 1; i-- > 0 && max_end[i] > vaddr;) {
      const Symbol& s = symbols[i];
      if (s.size > 0 && vaddr - s.start < s.size) return &s;
    }
    // A size-0 symbol covers up to the next symbol, inside its own section.
    const Symbol& nearest = symbols[idx];
    if (nearest.size == 0) {
      const Section* a = section_of(nearest.start);
      if (a && a == section_of(vaddr)) return &nearest;
    }
    return nullptr;
  }
};

NativeSymbolizer::NativeSymbolizer(int pid, std::chrono::milliseconds min_reread_interval)
    : pid_(pid), min_reread_interval_(min_reread_interval) {}
NativeSymbolizer::~NativeSymbolizer() = default;
NativeSymbolizer::NativeSymbolizer(NativeSymbolizer&&) noexcept = default;
NativeSymbolizer& NativeSymbolizer::operator=(NativeSymbolizer&&) noexcept = default;

bool NativeSymbolizer::read_maps() {
  maps_read_ = true;
  maps_reads_++;
  last_read_ = std::chrono::steady_clock::now();
  std::vector<MapsEntry> fresh = gpuprof::read_maps(pid_).value_or(std::vector<MapsEntry>{});
  if (!fresh.empty()) read_jit_map();
  // A process that has exited (a zombie) shows no mappings: keep the last
  // ones known, so that what it ran can still be named.
  if (fresh.empty()) return false;
  std::sort(fresh.begin(), fresh.end(), [](const MapsEntry& a, const MapsEntry& b) { return a.start < b.start; });
  bool changed = fresh.size() != mappings_.size() ||
                 !std::equal(fresh.begin(), fresh.end(), mappings_.begin(), [](const MapsEntry& a, const MapsEntry& b) {
                   return a.start == b.start && a.end == b.end && a.offset == b.offset && a.path == b.path;
                 });
  if (changed) {
    mappings_ = std::move(fresh);
    cache_.clear();  // an address may now belong to a different file
  }
  return true;
}

// perf's convention for JIT code: the process writes /tmp/perf-PID.map,
// one "START SIZE name" line (hex) per function. Read from the target's
// root, with the maps; absent (the usual case), JIT frames are "[jit]".
void NativeSymbolizer::read_jit_map() {
  jit_symbols_.clear();
  std::ifstream in("/proc/" + std::to_string(pid_) + "/root/tmp/perf-" + std::to_string(pid_) + ".map");
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const uint64_t start = std::strtoull(line.c_str(), &end, 16);
    if (end == line.c_str() || *end != ' ') continue;
    char* size_end = nullptr;
    const uint64_t size = std::strtoull(end + 1, &size_end, 16);
    if (size_end == end + 1 || *size_end != ' ' || size == 0) continue;
    jit_symbols_.push_back({start, start + size, std::string(size_end + 1)});
  }
  std::sort(jit_symbols_.begin(), jit_symbols_.end(),
            [](const JitSymbol& a, const JitSymbol& b) { return a.start < b.start; });
}

std::string NativeSymbolizer::jit_name(uint64_t address) const {
  auto it = std::upper_bound(jit_symbols_.begin(), jit_symbols_.end(), address,
                             [](uint64_t a, const JitSymbol& s) { return a < s.start; });
  if (it != jit_symbols_.begin() && address < std::prev(it)->end) return std::string(kJit) + " " + std::prev(it)->name;
  return kJit;
}

const MapsEntry* NativeSymbolizer::find_mapping(uint64_t address) const {
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                             [](uint64_t a, const MapsEntry& m) { return a < m.start; });
  if (it == mappings_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

NativeSymbolizer::FileSymbols& NativeSymbolizer::file_symbols(const MapsEntry& mapping) {
  const std::string& path = mapping.path;
  auto it = files_.find(path);
  if (it != files_.end()) return *it->second;
  auto file = std::make_unique<FileSymbols>();
  file->name = base_name(path);
  // As target_maps.h opens a target's files; once the target is gone, the
  // same path in gpuprof's mount namespace is the best left.
  auto openable = openable_path(pid_, mapping);
  if (!openable || !file->load(*openable)) file->load(path);
  opened_files_.push_back({path, file->image ? file->image->build_id() : ""});
  return *files_.emplace(path, std::move(file)).first->second;
}

std::string NativeSymbolizer::symbolize_uncached(uint64_t address) {
  const MapsEntry* m = find_mapping(address);
  if (!m) return kUnknown;
  // Code that runs in anonymous memory is JIT code (oneDNN's kernels, a JIT
  // compiler's), whatever the protection the last read of the maps saw: a
  // JIT writes its code into read-write memory and makes it executable
  // after (and a sampled instruction pointer is always in code).
  if (m->path.empty()) return jit_name(address);
  // [vdso] and [vsyscall] name their code; [heap], [stack] and the like
  // hold none to name.
  if (!m->is_file()) return m->path.starts_with("[v") ? m->path : kUnknown;
  FileSymbols& file = file_symbols(*m);
  uint64_t file_offset = address - m->start + m->offset;
  std::optional<uint64_t> vaddr = file.vaddr_of_offset(file_offset);
  if (!vaddr) return hex_offset(file.name, file_offset);
  if (const FileSymbols::Symbol* sym = file.lookup(*vaddr))
    return file.name + "!" + demangle_function_name(sym->name);
  return hex_offset(file.name, *vaddr);
}

std::optional<std::string> NativeSymbolizer::function_starting_at(uint64_t address) {
  try {
    if (!maps_read_ || !find_mapping(address)) read_maps();
    const MapsEntry* m = find_mapping(address);
    if (!m || !m->is_file()) return std::nullopt;
    FileSymbols& file = file_symbols(*m);
    std::optional<uint64_t> vaddr = file.vaddr_of_offset(address - m->start + m->offset);
    if (!vaddr) return std::nullopt;
    const FileSymbols::Symbol* sym = file.lookup(*vaddr);
    if (!sym || sym->start != *vaddr) return std::nullopt;
    return demangle_full(sym->name);
  } catch (...) {
    return std::nullopt;
  }
}

std::string NativeSymbolizer::symbolize(uint64_t address) {
  try {
    if (auto it = cache_.find(address); it != cache_.end()) return it->second;
    const bool read_now = !maps_read_;
    if (read_now) read_maps();
    if (!find_mapping(address)) {
      // Outside every known mapping: perhaps mapped since the last read (a
      // library loaded late, a JIT compiler's new code, which runs as soon
      // as it is written). A page not found unmapped by a read since is
      // looked for at once; one that was, at most once per
      // min_reread_interval (an address nothing will ever map).
      const uint64_t page = address >> 12;
      const bool known_unmapped = unmapped_pages_.count(page) != 0;
      if (known_unmapped && std::chrono::steady_clock::now() - last_read_ < min_reread_interval_) return kUnknown;
      if (!read_now) read_maps();
      if (!find_mapping(address)) {
        if (unmapped_pages_.size() >= kMaxUnmappedPages) unmapped_pages_.clear();
        unmapped_pages_.insert(page);
        return kUnknown;  // not cached: it may be mapped later
      }
    }
    std::string result = symbolize_uncached(address);
    if (cache_.size() >= kMaxCachedAddresses) cache_.clear();
    cache_.emplace(address, result);
    return result;
  } catch (...) {
    return kUnknown;
  }
}

}  // namespace gpuprof
