// python_offsets.h: where a CPython frame walker finds what it reads.
//
// 3.11 and 3.12 have no self-description: their offsets are tables checked
// against real interpreters (tests/unit/python_runtime_test.cpp). From 3.13 on, the
// interpreter publishes them in _Py_DebugOffsets at _PyRuntime+0 (the struct
// CPython keeps for out-of-process debuggers); that struct's own layout is
// versioned, so it is parsed only for the versions whose layout is known
// here, and its values are checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gpuprof {

// Offsets (bytes) of the fields a frame walker reads. kNoField = not present
// in this version.
struct PythonOffsets {
  static constexpr uint16_t kNoField = 0xffff;
  // PyThreadState -> current _PyInterpreterFrame:
  //   3.11/3.12: frame = *(*(tstate + tstate_cframe) + cframe_current_frame)
  //   3.13:      frame = *(tstate + tstate_cframe), cframe_current_frame = kNoField
  uint16_t tstate_cframe = 0;
  uint16_t cframe_current_frame = 0;
  // _PyInterpreterFrame
  uint16_t frame_code = 0;        // PyCodeObject* (3.13: f_executable, None in C shim frames)
  uint16_t frame_previous = 0;    // _PyInterpreterFrame*
  uint16_t frame_prev_instr = 0;  // _Py_CODEUNIT* (3.13: instr_ptr, the same instruction)
  uint16_t frame_is_entry = kNoField;  // 3.11: bool, nonzero = entry frame of a C call of the eval loop
  uint16_t frame_owner = kNoField;     // 3.12+: char; owner == frame_owner_cshim marks a C shim frame
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

// The tables for CPython major.minor: 3.11 and 3.12 only (3.13 and later
// describe themselves: python_offsets_from_debug_offsets).
std::optional<PythonOffsets> python_offsets_for(int major, int minor);

// Versions of _Py_DebugOffsets this file can read: 3.13 only.
bool python_debug_offsets_known(int major, int minor);

// Bytes of _Py_DebugOffsets to read from _PyRuntime+0 (3.13's layout).
constexpr size_t kPythonDebugOffsetsSize = 73 * 8;

// Parses a 3.13 _Py_DebugOffsets (the first kPythonDebugOffsetsSize bytes of
// _PyRuntime). nullopt, with *why, when the cookie is not "xdebugpy", the
// version it carries is not expected_hex's major.minor, the build is
// free-threaded (another frame layout), or an offset lies outside the size
// the struct gives for its object.
std::optional<PythonOffsets> python_offsets_from_debug_offsets(const void* bytes, size_t len,
                                                               uint32_t expected_hex,
                                                               std::string* why);

}  // namespace gpuprof
