#include "ret_finder.h"

#include <capstone/capstone.h>

namespace gpuprof {

BodyExits find_body_exits(std::span<const uint8_t> code, uint64_t address) {
  BodyExits exits;
  csh handle;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return exits;
  cs_insn* insn = cs_malloc(handle);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t pc = address;
  bool first = true;
  while (size > 0 && cs_disasm_iter(handle, &bytes, &size, &pc, insn)) {
    if (first) {
      exits.first_is_push = insn->id == X86_INS_PUSH;
      first = false;
    }
    if (insn->id == X86_INS_RET || insn->id == X86_INS_RETF) exits.ret_addresses.push_back(insn->address);
  }
  exits.decoded_whole_body = size == 0;
  cs_free(insn, 1);
  cs_close(&handle);
  return exits;
}

}  // namespace gpuprof
