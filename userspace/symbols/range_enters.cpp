#include "symbols/range_enters.h"

#include <capstone/capstone.h>

#include <optional>
#include <set>

namespace gpuprof {
namespace {

// How far around the exported function its file's other functions are
// looked for: the whole of record_function_ops.cpp's code, with room.
constexpr uint64_t kWindowBytes = 64 * 1024;

bool sets_esi_to_user_scope(const cs_insn& insn) {
  const cs_x86& x = insn.detail->x86;
  return insn.id == X86_INS_MOV && x.op_count == 2 && x.operands[0].type == X86_OP_REG &&
         x.operands[0].reg == X86_REG_ESI && x.operands[1].type == X86_OP_IMM && x.operands[1].imm == 7;
}

bool writes_rsi(csh handle, const cs_insn& insn) {
  cs_regs read, written;
  uint8_t read_count = 0, write_count = 0;
  if (cs_regs_access(handle, &insn, read, &read_count, written, &write_count) != CS_ERR_OK) return true;
  for (uint8_t i = 0; i < write_count; i++)
    if (written[i] == X86_REG_RSI || written[i] == X86_REG_ESI || written[i] == X86_REG_SI) return true;
  return false;
}

// Calls in [address, address + code.size()) made with esi == 7 (set by a
// `mov $0x7,%esi` that nothing overwrote since): their targets and addresses.
std::vector<std::pair<uint64_t, uint64_t>> user_scope_calls(csh handle, std::span<const uint8_t> code,
                                                            uint64_t address) {
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  cs_insn* insn = cs_malloc(handle);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t pc = address;
  bool esi_is_user_scope = false;
  while (size > 0 && cs_disasm_iter(handle, &bytes, &size, &pc, insn)) {
    const cs_x86& x = insn->detail->x86;
    if (insn->id == X86_INS_CALL) {
      if (esi_is_user_scope && x.op_count == 1 && x.operands[0].type == X86_OP_IMM)
        calls.emplace_back(static_cast<uint64_t>(x.operands[0].imm), insn->address);
      esi_is_user_scope = false;  // a call clobbers it
    } else if (sets_esi_to_user_scope(*insn)) {
      esi_is_user_scope = true;
    } else if (esi_is_user_scope && writes_rsi(handle, *insn)) {
      esi_is_user_scope = false;
    }
  }
  cs_free(insn, 1);
  return calls;
}

}  // namespace

std::vector<uint64_t> unexported_range_enters(const ElfImage& elf, const FunctionStarts& starts, uint64_t enter_new,
                                              uint64_t enter_new_size) {
  csh handle;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return {};
  cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  std::vector<uint64_t> found;
  // The constructor as this file calls it (directly or through its PLT stub).
  const auto own = user_scope_calls(handle, elf.bytes_at(enter_new, enter_new_size), enter_new);
  if (own.size() == 1) {
    const uint64_t ctor = own[0].first;
    std::set<uint64_t> enters;
    std::optional<uint64_t> at = starts.containing(enter_new > kWindowBytes ? enter_new - kWindowBytes : 0);
    if (!at) at = starts.next_after(0);
    while (at && *at < enter_new + kWindowBytes) {
      const std::optional<uint64_t> end = starts.next_after(*at);
      if (!end) break;
      if (*end - *at <= kWindowBytes)  // an enter function is small; a giant one is something else
        for (const auto& [target, site] : user_scope_calls(handle, elf.bytes_at(*at, *end - *at), *at))
          if (target == ctor && *at != enter_new) enters.insert(*at);
      at = end;
    }
    found.assign(enters.begin(), enters.end());
  }
  cs_close(&handle);
  return found;
}

}  // namespace gpuprof
