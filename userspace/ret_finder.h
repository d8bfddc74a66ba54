// ret_finder.h: where a function body returns, found by disassembly.
//
// Exit events come from probes on the `ret` instructions of each
// at::_ops::<op>::call body (return probes would abort the target when an
// exception crosses the frame). A byte search for 0xc3 would hit immediates
// and displacements, so the body is decoded with capstone, linearly from the
// symbol's start to its end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gpuprof {

struct BodyExits {
  std::vector<uint64_t> ret_addresses;  // virtual addresses of ret/retf instructions
  bool decoded_whole_body = false;      // false if capstone stopped early (data in text?)
  bool first_is_push = false;           // entry probe is emulated (one trap) when true
};

// code: the function's bytes; address: its virtual address.
BodyExits find_body_exits(std::span<const uint8_t> code, uint64_t address);

}  // namespace gpuprof
