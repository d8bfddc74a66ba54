// python_runtime.h: locate the CPython runtime inside a target process.
//
// What a frame walker (BPF or user space) needs to find the Python stack of a
// thread of the target: the CPython version (3.11 and 3.12 only), the address
// of _PyRuntime, the pthread key that holds each thread's PyThreadState
// (_PyRuntime.gilstate.autoTSSkey, decoded from PyGILState_GetThisThreadState's
// machine code, never hard-coded) and the struct offsets for that version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gpuprof {

// Offsets (bytes) of the fields a frame walker reads. 0xffff = not present in
// this version.
struct PythonOffsets {
  // PyThreadState -> current _PyInterpreterFrame: frame = *(*(tstate + tstate_cframe) + cframe_current_frame)
  uint16_t tstate_cframe = 0;
  uint16_t cframe_current_frame = 0;
  // _PyInterpreterFrame
  uint16_t frame_code = 0;        // PyCodeObject*
  uint16_t frame_previous = 0;    // _PyInterpreterFrame*
  uint16_t frame_prev_instr = 0;  // _Py_CODEUNIT*
  uint16_t frame_is_entry = 0xffff;  // 3.11: bool, nonzero = entry frame of a C call of the eval loop
  uint16_t frame_owner = 0xffff;     // 3.12: char; owner == frame_owner_cshim marks a C shim frame
  uint8_t frame_owner_cshim = 3;
  uint16_t frame_localsplus = 72;    // PyObject* localsplus[]: the frame's first local is its first argument
  // PyCodeObject
  uint16_t code_filename = 112;
  uint16_t code_name = 120;
  uint16_t code_qualname = 128;
  uint16_t code_linetable = 136;
  uint16_t code_firstlineno = 0;
  uint16_t code_bytecode = 0;  // tp_basicsize of PyCode_Type: the first code unit
  // PyUnicodeObject
  uint16_t str_length = 16;
  uint16_t str_state = 32;
  uint16_t str_ascii_data = 0;    // compact ASCII data (after PyASCIIObject)
  uint16_t str_compact_data = 0;  // compact non-ASCII data (after PyCompactUnicodeObject)
  // PyObject / PyTypeObject (stable across 3.x)
  uint16_t object_type = 8;  // ob_type
  uint16_t type_name = 24;   // tp_name: const char*
  uint16_t cell_ref = 16;    // PyCellObject ob_ref
  // PyBytesObject
  uint16_t bytes_size = 16;
  uint16_t bytes_data = 32;
};

// The offsets for CPython major.minor; nullopt for versions other than 3.11, 3.12.
std::optional<PythonOffsets> python_offsets_for(int major, int minor);

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

// Finds the CPython runtime of process pid. nullopt (and *why set) when no
// mapped python3.x executable or libpython3.x.so defines _PyRuntime and
// PyGILState_GetThisThreadState, when the version is not 3.11/3.12, when the
// key cannot be decoded or read, or when the key is not initialized yet.
std::optional<PythonRuntime> find_python_runtime(int pid, std::string* why);

// glibc x86-64: where the value of pthread key `key` lives for a thread whose
// fs base is fsbase (struct pthread specific_1stblock[key].data); nullopt for
// key >= 32 (second-level blocks).
std::optional<uint64_t> glibc_tls_slot_address(uint64_t fsbase, uint32_t key);

// process_vm_readv of len bytes; true only when all of them were read.
bool read_target_memory(int pid, uint64_t address, void* buffer, size_t len);

}  // namespace gpuprof
