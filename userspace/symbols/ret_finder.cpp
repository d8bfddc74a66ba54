#include "symbols/ret_finder.h"

#include <capstone/capstone.h>

#include <limits>
#include <optional>
#include <unordered_set>

namespace gpuprof {
namespace {

struct Insn {
  uint64_t address = 0;
  unsigned id = 0;
  cs_x86 x86 = {};
  bool writes_rsp = false;
  bool writes_rbp = false;
  bool is_branch = false;  // jump, call, ret, interrupt
};

bool is_reg(const cs_x86_op& op, x86_reg reg) { return op.type == X86_OP_REG && op.reg == reg; }

// What arch/x86/kernel/uprobes.c emulates at a probe (one trap) instead of
// single-stepping out of line (several): `push reg` (push_setup_xol_ops)
// and relative jumps, jccs and calls (branch_setup_xol_ops).
bool kernel_emulates(const Insn& insn) {
  if (insn.id == X86_INS_PUSH) return insn.x86.op_count == 1 && insn.x86.operands[0].type == X86_OP_REG;
  const bool relative = insn.x86.op_count == 1 && insn.x86.operands[0].type == X86_OP_IMM;
  return relative && insn.is_branch && insn.id != X86_INS_RET;
}

// `sub %fs:0x28,%reg` or `xor %fs:0x28,%reg`: the stack-protector compare.
bool is_canary_compare(const Insn& insn) {
  if (insn.id != X86_INS_SUB && insn.id != X86_INS_XOR) return false;
  for (int i = 0; i < insn.x86.op_count; i++) {
    const cs_x86_op& op = insn.x86.operands[i];
    if (op.type == X86_OP_MEM && op.mem.segment == X86_REG_FS && op.mem.disp == 0x28 &&
        op.mem.base == X86_REG_INVALID && op.mem.index == X86_REG_INVALID)
      return true;
  }
  return false;
}

// Simulates insns (after the jne, up to and including the ret) and returns
// where the entry sp is relative to rsp or rbp at the jne.
std::optional<EmulatedExit> simulate_epilogue(std::span<const Insn> insns) {
  bool base_is_rbp = false;  // rsp at this point == base + offset
  int64_t offset = 0;
  bool rbp_clobbered = false;
  for (const Insn& insn : insns) {
    const cs_x86& x = insn.x86;
    if (insn.id == X86_INS_RET) {
      if (offset < std::numeric_limits<int16_t>::min() || offset > std::numeric_limits<int16_t>::max())
        return std::nullopt;
      EmulatedExit exit;
      exit.ret_address = insn.address;
      exit.base_is_rbp = base_is_rbp;
      exit.entry_sp_offset = static_cast<int16_t>(offset);
      return exit;
    }
    if (insn.is_branch) return std::nullopt;
    if (insn.id == X86_INS_POP && x.op_count == 1 && x.operands[0].type == X86_OP_REG) {
      offset += 8;
      if (x.operands[0].reg == X86_REG_RBP) rbp_clobbered = true;
      if (x.operands[0].reg == X86_REG_RSP) return std::nullopt;
      continue;
    }
    if (insn.id == X86_INS_PUSH) {
      offset -= 8;
      continue;
    }
    if ((insn.id == X86_INS_ADD || insn.id == X86_INS_SUB) && x.op_count == 2 &&
        is_reg(x.operands[0], X86_REG_RSP) && x.operands[1].type == X86_OP_IMM) {
      offset += insn.id == X86_INS_ADD ? x.operands[1].imm : -x.operands[1].imm;
      continue;
    }
    if (insn.id == X86_INS_LEA && x.op_count == 2 && is_reg(x.operands[0], X86_REG_RSP)) {
      const x86_op_mem& mem = x.operands[1].mem;
      if (rbp_clobbered || mem.base != X86_REG_RBP || mem.index != X86_REG_INVALID ||
          mem.segment != X86_REG_INVALID)
        return std::nullopt;
      base_is_rbp = true;
      offset = mem.disp;
      continue;
    }
    if (insn.id == X86_INS_LEAVE) {  // mov %rbp,%rsp; pop %rbp
      if (rbp_clobbered) return std::nullopt;
      base_is_rbp = true;
      offset = 8;
      rbp_clobbered = true;
      continue;
    }
    if (insn.id == X86_INS_MOV && x.op_count == 2 && is_reg(x.operands[0], X86_REG_RSP) &&
        is_reg(x.operands[1], X86_REG_RBP)) {
      if (rbp_clobbered) return std::nullopt;
      base_is_rbp = true;
      offset = 0;
      continue;
    }
    if (insn.writes_rsp) return std::nullopt;  // an rsp change we cannot follow
    if (insn.writes_rbp) rbp_clobbered = true;
  }
  return std::nullopt;
}

}  // namespace

BodyExits find_body_exits(std::span<const uint8_t> code, uint64_t address) {
  BodyExits exits;
  csh handle;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return exits;
  cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  cs_insn* raw = cs_malloc(handle);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t pc = address;
  std::vector<Insn> insns;
  std::unordered_set<uint64_t> branch_targets;
  while (size > 0 && cs_disasm_iter(handle, &bytes, &size, &pc, raw)) {
    Insn insn;
    insn.address = raw->address;
    insn.id = raw->id;
    insn.x86 = raw->detail->x86;
    cs_regs read, written;
    uint8_t read_count = 0, write_count = 0;
    if (cs_regs_access(handle, raw, read, &read_count, written, &write_count) == CS_ERR_OK) {
      for (uint8_t i = 0; i < write_count; i++) {
        insn.writes_rsp |= written[i] == X86_REG_RSP;
        insn.writes_rbp |= written[i] == X86_REG_RBP;
      }
    }
    for (uint8_t g = 0; g < raw->detail->groups_count; g++) {
      uint8_t group = raw->detail->groups[g];
      if (group == CS_GRP_JUMP || group == CS_GRP_CALL || group == CS_GRP_RET || group == CS_GRP_INT ||
          group == CS_GRP_IRET)
        insn.is_branch = true;
      if (group == CS_GRP_JUMP && insn.x86.op_count == 1 && insn.x86.operands[0].type == X86_OP_IMM)
        branch_targets.insert(static_cast<uint64_t>(insn.x86.operands[0].imm));
    }
    if (insn.id == X86_INS_RET || insn.id == X86_INS_RETF) exits.ret_addresses.push_back(insn.address);
    insns.push_back(insn);
  }
  exits.decoded_whole_body = size == 0;
  cs_free(raw, 1);
  cs_close(&handle);

  if (!insns.empty()) {
    size_t entry = 0;
    if (insns[0].id == X86_INS_ENDBR64 && insns.size() > 1 && !branch_targets.count(insns[1].address)) {
      entry = 1;
      exits.entry_after_endbr = true;
    }
    exits.entry_address = insns[entry].address;
    exits.entry_emulated = kernel_emulates(insns[entry]);
  }

  // For each ret: the nearest canary `jne` before it, with a straight-line
  // epilogue that nothing in the body jumps into.
  for (size_t r = 0; r < insns.size(); r++) {
    if (insns[r].id != X86_INS_RET) continue;
    for (size_t j = r; j-- > 1;) {
      if (insns[j].is_branch) {
        if (insns[j].id == X86_INS_JNE && is_canary_compare(insns[j - 1])) {
          bool entered_from_elsewhere = false;
          for (size_t k = j + 1; k <= r; k++)
            entered_from_elsewhere |= branch_targets.count(insns[k].address) > 0;
          auto exit = entered_from_elsewhere
                          ? std::nullopt
                          : simulate_epilogue(std::span(insns).subspan(j + 1, r - j));
          if (exit) {
            exit->address = insns[j].address;
            exits.emulated_exits.push_back(*exit);
          }
        }
        break;  // only the last branch before the ret can be the check
      }
    }
  }
  return exits;
}

}  // namespace gpuprof
