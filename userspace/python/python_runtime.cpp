#include "python/python_runtime.h"

#include "symbols/elf_image.h"
#include "symbols/target_maps.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <sys/uio.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <fstream>
#include <map>
#include <vector>
#include <regex>
#include <set>
#include <sstream>

namespace gpuprof {
namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool looks_like_python_file(std::string_view base) {
  return base.starts_with("python3") || base.starts_with("libpython3");
}

// Version from the file: Py_Version (3.11+, a const uint32 PY_VERSION_HEX),
// else "python3.N"/"libpython3.N" in the file name.
bool detect_version(const ElfImage& elf, const std::string& path, int* major, int* minor,
                    int* micro) {
  if (auto v = elf.symbol_value("Py_Version")) {
    auto bytes = elf.bytes_at(*v, 4);
    if (bytes.size() == 4) {
      uint32_t hexv;
      std::memcpy(&hexv, bytes.data(), 4);
      *major = (hexv >> 24) & 0xff;
      *minor = (hexv >> 16) & 0xff;
      *micro = (hexv >> 8) & 0xff;
      if (*major == 3) return true;
    }
  }
  static const std::regex re(R"((?:lib)?python(\d+)\.(\d+))");
  std::smatch m;
  std::string base = path.substr(path.rfind('/') + 1);
  if (std::regex_search(base, m, re)) {
    *major = std::stoi(m[1]);
    *minor = std::stoi(m[2]);
    *micro = -1;
    return true;
  }
  return false;
}

// The (ELF) code of PyGILState_GetThisThreadState, decoded by
// decode_tss_key_address (python_runtime.h), GOT slots read from the target.
Result<uint64_t> find_tss_key_address(int pid, uint64_t bias, const ElfImage& elf, uint64_t function,
                                      uint64_t runtime) {
  auto code = elf.bytes_at(function, 64);
  if (code.empty()) code = elf.bytes_at(function, 32);
  if (code.empty()) return Error("cannot read the code of PyGILState_GetThisThreadState");
  return decode_tss_key_address(code, function, runtime, [&](uint64_t slot) -> std::optional<uint64_t> {
    uint64_t value = 0;
    if (!read_target_memory(pid, bias + slot, &value, 8)) return std::nullopt;
    return value - bias;
  });
}

}  // namespace

// Four shapes are known:
//   non-PIC (Debian's /usr/bin/python3.11): mov edi, dword [rip+&_key];
//     jmp pthread_getspecific  -> the load reads _key itself;
//   non-PIE, 3.12 (Ubuntu 24.04's /usr/bin/python3.12): mov edi, &Py_tss_t
//     (an immediate); call PyThread_tss_is_created -> _key at +4;
//   PIC (a libpython3.11.so): mov rax, [rip+GOT(_PyRuntime)];
//     lea rdi, [rax+off]; jmp PyThread_tss_get -> rdi = &Py_tss_t, _key at +4;
//   PIC, 3.12/3.13: lea rbx, [rax+off]; mov rdi, rbx;
//     call PyThread_tss_is_created -> the same &Py_tss_t, through rbx.
// Registers holding _PyRuntime-relative pointers are tracked until the first
// call/jmp that follows a load of edi/rdi.
Result<uint64_t> decode_tss_key_address(std::span<const uint8_t> code, uint64_t function, uint64_t runtime,
                                        const std::function<std::optional<uint64_t>(uint64_t)>& read_got) {
  csh handle;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return Error("capstone cs_open failed");
  cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  cs_insn* insn = nullptr;
  size_t n = cs_disasm(handle, code.data(), code.size(), function, 0, &insn);
  auto in_runtime = [&](uint64_t a) { return a >= runtime && a < runtime + (1u << 20); };
  // edi and rdi are one register here (a 32-bit mov zero-extends).
  auto wide = [](unsigned reg) { return reg == X86_REG_EDI ? static_cast<unsigned>(X86_REG_RDI) : reg; };
  std::map<unsigned, uint64_t> ptr;      // 64-bit register -> pointer into _PyRuntime (vaddr)
  std::optional<uint64_t> found;         // address of _key
  for (size_t i = 0; i < n; ++i) {
    const cs_insn& in = insn[i];
    unsigned id = in.id;
    if (id == X86_INS_CALL || id == X86_INS_JMP) {
      if (found) break;
      continue;  // an early-exit branch before the load
    }
    if (id == X86_INS_RET) break;
    if ((id != X86_INS_MOV && id != X86_INS_LEA) || !in.detail) continue;
    const cs_x86& x = in.detail->x86;
    if (x.op_count != 2 || x.operands[0].type != X86_OP_REG) continue;
    unsigned dst = wide(x.operands[0].reg);
    if (id == X86_INS_MOV && x.operands[1].type == X86_OP_IMM) {
      // mov edi, &Py_tss_t (a non-PIE executable's absolute address).
      const uint64_t imm = static_cast<uint64_t>(x.operands[1].imm);
      ptr.erase(dst);
      if (!in_runtime(imm)) continue;
      ptr[dst] = imm;
      if (dst == X86_REG_RDI) found = imm + 4;  // &Py_tss_t -> &_key
      continue;
    }
    if (id == X86_INS_MOV && x.operands[1].type == X86_OP_REG) {
      // mov rdi, rbx (pyenv's 3.12/3.13: the &Py_tss_t is kept in a
      // callee-saved register across PyThread_tss_is_created).
      auto src = ptr.find(wide(x.operands[1].reg));
      if (src == ptr.end()) {
        ptr.erase(dst);
        continue;
      }
      ptr[dst] = src->second;
      if (dst == X86_REG_RDI) found = src->second + 4;  // &Py_tss_t -> &_key
      continue;
    }
    if (x.operands[1].type != X86_OP_MEM) continue;
    const x86_op_mem& mem = x.operands[1].mem;
    std::optional<uint64_t> addr;  // effective address, as an ELF virtual address
    if (mem.base == X86_REG_RIP && mem.index == X86_REG_INVALID) {
      addr = in.address + in.size + mem.disp;
    } else if (mem.index == X86_REG_INVALID && ptr.count(mem.base)) {
      addr = ptr[mem.base] + mem.disp;
    }
    ptr.erase(dst);
    if (!addr) continue;
    if (id == X86_INS_LEA) {
      if (in_runtime(*addr)) {
        ptr[dst] = *addr;
        if (dst == X86_REG_RDI) found = *addr + 4;  // &Py_tss_t -> &_key
      }
    } else if (x.operands[1].size == 4 && in_runtime(*addr)) {
      if (dst == X86_REG_RDI) found = *addr;  // _key itself
    } else if (x.operands[1].size == 8 && !in_runtime(*addr)) {
      // A GOT slot holding &_PyRuntime?
      if (read_got(*addr) == runtime) ptr[dst] = runtime;
    }
  }
  if (n) cs_free(insn, n);
  cs_close(&handle);
  if (!found) return Error("no load of autoTSSkey found in PyGILState_GetThisThreadState");
  return *found;
}

bool read_target_memory(int pid, uint64_t address, void* buffer, size_t len) {
  if (len == 0) return true;
  iovec local{buffer, len};
  iovec remote{reinterpret_cast<void*>(address), len};
  ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  return got == static_cast<ssize_t>(len);
}

std::optional<uint64_t> glibc_tls_slot_address(uint64_t fsbase, uint32_t key) {
  if (key >= 32) return std::nullopt;
  return fsbase + 0x310 + 16ull * key + 8;
}

Result<PythonRuntime> find_python_runtime(int pid, bool* may_change) {
  bool ignored = false;
  if (!may_change) may_change = &ignored;
  *may_change = false;
  auto read = read_maps(pid);
  if (!read || read->empty()) return Error("cannot read /proc/" + std::to_string(pid) + "/maps");
  const std::vector<MapsEntry>& maps = *read;
  std::set<std::string> seen;
  std::string last_reason = "no mapped python3.x executable or libpython3.x.so defines _PyRuntime";
  for (const MapsEntry& m : maps) {
    if (!m.is_file() || !looks_like_python_file(m.base_name()) || !seen.insert(m.path).second) continue;
    PythonRuntime rt;
    rt.path_in_target = m.path;
    auto path = openable_path(pid, m);
    if (!path) {
      // Said if no other file defines the runtime: a process in a chroot
      // whose interpreter gpuprof cannot open must not read as "no Python".
      last_reason = path.error();
      continue;
    }
    rt.path_for_us = *path;
    auto elf = ElfImage::open(rt.path_for_us);
    if (!elf) continue;
    auto runtime = elf->symbol_value("_PyRuntime");
    auto getter = elf->symbol_value("PyGILState_GetThisThreadState");
    if (!runtime || !getter) continue;
    if (!detect_version(*elf, m.path, &rt.major, &rt.minor, &rt.micro))
      return Error("cannot tell the CPython version of " + m.path);
    // Load bias: the mapping at file offset 0 minus the first PT_LOAD's address.
    std::optional<uint64_t> map0;
    for (const MapsEntry& k : maps)
      if (k.path == m.path && k.inode == m.inode && k.offset == 0) {
        map0 = k.start;
        break;
      }
    auto vaddr0 = elf->first_load_address();
    if (!map0 || !vaddr0) return Error("cannot compute the load address of " + m.path);
    rt.load_bias = *map0 - *vaddr0;
    rt.runtime_address = rt.load_bias + *runtime;
    const std::string version =
        "CPython " + std::to_string(rt.major) + "." + std::to_string(rt.minor);
    std::optional<PythonOffsets> offsets;
    if (python_debug_offsets_known(rt.major, rt.minor)) {
      // The target's own description of itself, at _PyRuntime+0.
      std::vector<uint8_t> debug(kPythonDebugOffsetsSize);
      if (!read_target_memory(pid, rt.runtime_address, debug.data(), debug.size()))
        return Error("process_vm_readv of _Py_DebugOffsets at " + hex(rt.runtime_address) + " failed: " +
                     std::strerror(errno));
      const uint32_t hexv = (uint32_t(rt.major) << 24) | (uint32_t(rt.minor) << 16);
      auto from_debug = python_offsets_from_debug_offsets(debug.data(), debug.size(), hexv);
      if (!from_debug) return Error(version + " in " + m.path + ": " + from_debug.error());
      offsets = *from_debug;
    } else {
      offsets = python_offsets_for(rt.major, rt.minor);
    }
    if (!offsets) return Error(version + " is not supported (3.11 to 3.13): " + m.path);
    rt.offsets = *offsets;
    ASSIGN_OR_RETURN(const uint64_t key_vaddr, find_tss_key_address(pid, rt.load_bias, *elf, *getter, *runtime));
    rt.tss_key_field_offset = key_vaddr - *runtime;
    rt.tss_key_address = rt.load_bias + key_vaddr;
    // Py_tss_t {int _is_initialized; pthread_key_t _key;}: the load reads the
    // 4 bytes of _key, so _is_initialized sits just before it.
    uint32_t pair[2];
    if (!read_target_memory(pid, rt.tss_key_address - 4, pair, sizeof(pair)))
      return Error("process_vm_readv of autoTSSkey at " + hex(rt.tss_key_address) + " failed: " +
                   std::strerror(errno));
    if (pair[0] != 1) {
      *may_change = true;
      return Error("autoTSSkey is not initialized (yet) in " + m.path);
    }
    rt.tss_key = pair[1];
    std::ostringstream d;
    d << "CPython " << rt.major << "." << rt.minor;
    if (rt.micro >= 0) d << "." << rt.micro;
    d << " in " << m.path << ": _PyRuntime " << hex(rt.runtime_address) << ", autoTSSkey._key at +"
      << hex(rt.tss_key_field_offset) << " = " << rt.tss_key;
    rt.description = d.str();
    return rt;
  }
  *may_change = true;
  return Error(last_reason);
}

Result<gp_python_config> python_walk_config(const PythonRuntime& runtime) {
  std::optional<uint64_t> slot = glibc_tls_slot_address(0, runtime.tss_key);
  if (!slot) return Error("the interpreter's thread-state key is beyond glibc's first 32");
  const PythonOffsets& o = runtime.offsets;
  gp_python_config config{};
  config.tls_offset = *slot;
  config.enabled = 1;
  config.tstate_cframe = o.tstate_cframe;
  static_assert(GP_PY_NO_CFRAME == PythonOffsets::kNoField);
  config.cframe_frame = o.cframe_current_frame;
  config.frame_code = o.frame_code;
  config.frame_previous = o.frame_previous;
  config.frame_instr = o.frame_prev_instr;
  config.frame_owner = o.frame_owner;
  config.owner_cshim = o.frame_owner_cshim;
  config.frame_localsplus = o.frame_localsplus;
  return config;
}

}  // namespace gpuprof
