// python_runtime.h: locate the CPython runtime inside a target process.
//
// What a frame walker (BPF or user space) needs to find the Python stack of a
// thread of the target: the CPython version (3.11 to 3.13), the address of
// _PyRuntime, the pthread key that holds each thread's PyThreadState
// (_PyRuntime.gilstate.autoTSSkey, decoded from PyGILState_GetThisThreadState's
// machine code, never hard-coded) and the struct offsets for that version
// (python_offsets.h: tables for 3.11/3.12, the target's own _Py_DebugOffsets
// from 3.13 on).
#pragma once

#include "abi_common.h"
#include "base/result.h"
#include "python/python_offsets.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace gpuprof {

struct PythonRuntime {
  int major = 0, minor = 0, micro = -1;  // micro -1 when unknown
  std::string path_in_target;            // the file defining _PyRuntime
  std::string path_for_us;               // through /proc/PID/root
  uint64_t load_bias = 0;                // runtime address - ELF virtual address
  uint64_t runtime_address = 0;          // &_PyRuntime in the target
  uint64_t tss_key_address = 0;          // &_PyRuntime.gilstate.autoTSSkey._key in the target
  uint64_t tss_key_field_offset = 0;     // tss_key_address - runtime_address (0x254 in Debian 3.11.2)
  uint32_t tss_key = 0;                  // the pthread_key_t value
  PythonOffsets offsets;
  std::string description;  // one line, for logs
};

// Finds the CPython runtime of process pid. An error when no mapped
// python3.x executable or libpython3.x.so defines _PyRuntime and
// PyGILState_GetThisThreadState, when the version is not 3.11-3.13 (or its
// _Py_DebugOffsets do not check out), when the key cannot be decoded or
// read, or when the key is not initialized yet. *may_change (when given)
// tells the failures that may pass as the process goes on (no interpreter
// mapped yet, key not initialized yet) from those that will not.
Result<PythonRuntime> find_python_runtime(int pid, bool* may_change = nullptr);

// glibc x86-64: where the value of pthread key `key` lives for a thread whose
// fs base is fsbase (struct pthread specific_1stblock[key].data); nullopt for
// key >= 32 (second-level blocks).
std::optional<uint64_t> glibc_tls_slot_address(uint64_t fsbase, uint32_t key);

// What the BPF frame walk (bpf/python_frames.bpf.h) needs to walk the
// frames of `runtime` (enabled): its offsets, and the thread state's TLS
// slot at fs base + tls_offset; an error when the key is beyond glibc's
// first 32.
Result<gp_python_config> python_walk_config(const PythonRuntime& runtime);

// The (ELF virtual) address of autoTSSkey._key, decoded from the machine
// code of PyGILState_GetThisThreadState (`code`, at ELF address `function`)
// in a file whose _PyRuntime is at ELF address `runtime`; read_got reads a
// GOT slot (an ELF address) as an ELF address. An error when no known
// shape matches (python_runtime.cpp lists them).
Result<uint64_t> decode_tss_key_address(std::span<const uint8_t> code, uint64_t function, uint64_t runtime,
                                        const std::function<std::optional<uint64_t>(uint64_t)>& read_got);

// process_vm_readv of len bytes; true only when all of them were read.
bool read_target_memory(int pid, uint64_t address, void* buffer, size_t len);

}  // namespace gpuprof
