// ret_finder.h: where a function body returns, found by disassembly.
//
// Exit events come from probes on the way out of each
// at::_ops::<op>::call body (return probes would abort the target when an
// exception crosses the frame). A byte search for 0xc3 would hit immediates
// and displacements, so the body is decoded with capstone, linearly from the
// symbol's start to its end.
//
// Two kinds of exit site:
// - the `ret` itself. Always right, but the kernel single-steps `ret` out of
//   line: several traps, ~12-40 us per hit on a nested-virtualisation VM.
// - the stack-protector check's `jne` on the return path
//   (`sub %fs:0x28,%reg; jne __stack_chk_fail`). The kernel emulates a jcc
//   (one trap, ~0.6 us), and the check runs on every normal return by
//   construction: skipping it would defeat the protector. The stack pointer
//   there is not the entry sp, so the instructions from the jne to the ret are
//   simulated to express the entry sp as rsp or rbp plus a constant at the
//   jne. Only straight-line epilogues built of stack-pointer arithmetic, pops
//   and plain moves qualify; anything else falls back to the `ret`.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gpuprof {

struct EmulatedExit {
  uint64_t address = 0;      // the canary check's jne
  uint64_t ret_address = 0;  // the ret it leads to
  bool base_is_rbp = false;  // entry sp = (rbp or rsp at the jne) + entry_sp_offset
  int16_t entry_sp_offset = 0;
};

struct BodyExits {
  std::vector<uint64_t> ret_addresses;  // virtual addresses of ret instructions
  // One per ret that has a usable stack-protector check before it, in the
  // order of ret_addresses.
  std::vector<EmulatedExit> emulated_exits;
  bool decoded_whole_body = false;  // false if capstone stopped early (data in text?)
  // Where the entry probe goes: the first instruction, or the one after a
  // leading `endbr64` (CET builds: the kernel single-steps endbr64, while it
  // emulates the `push` that usually follows; nothing changes the registers
  // or the stack in between). The first instruction when a branch of the
  // body targets the one after it (the probe would then fire twice).
  uint64_t entry_address = 0;
  bool entry_emulated = false;  // a push: the kernel emulates it (one trap)
  bool entry_after_endbr = false;
};

// code: the function's bytes; address: its virtual address.
BodyExits find_body_exits(std::span<const uint8_t> code, uint64_t address);

}  // namespace gpuprof
