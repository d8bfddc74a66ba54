// python_offsets.h: where a CPython frame walker (and the dict reader of
// python_dicts.h) finds what it reads.
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

#include "base/result.h"

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

  // Instance attributes and dicts (python/python_dicts.h).
  // PyTypeObject
  uint16_t type_flags = 168;        // tp_flags (unsigned long)
  uint16_t type_dictoffset = 288;   // tp_dictoffset (Py_ssize_t): > 0 = the __dict__ slot of a non-managed type
  uint16_t heap_type_cached_keys = 0;  // PyHeapTypeObject.ht_cached_keys: the keys its instances share
  // Where an instance of a Py_TPFLAGS_MANAGED_DICT type keeps its attributes.
  enum class ManagedDict : uint8_t {
    kNone,                 // not known for this version
    kValuesBeforeDict,     // 3.11: PyDictValues* at obj-32, PyDictObject* at obj-24 (one of them set)
    kTaggedDictOrValues,   // 3.12: one word at obj-24: values-1 (low bit set) or the dict
    kInlineValues,         // 3.13: dict at obj-24; without one, values inline at obj+16 (Py_TPFLAGS_INLINE_VALUES)
  };
  ManagedDict managed_dict = ManagedDict::kNone;
  // PyDictObject
  uint16_t dict_version = 24;  // ma_version_tag: changes with every change of the dict (3.11 to 3.13)
  uint16_t dict_keys = 32;    // ma_keys
  uint16_t dict_values = 40;  // ma_values: nullptr for a combined table
  // PyDictKeysObject (one layout from 3.11 to 3.13, not free-threaded)
  uint16_t keys_log2_size = 8;
  uint16_t keys_log2_index_bytes = 9;
  uint16_t keys_kind = 10;       // DICT_KEYS_GENERAL 0, _UNICODE 1, _SPLIT 2
  uint16_t keys_nentries = 24;   // entries used (deleted ones included)
  uint16_t keys_indices = 32;    // dk_indices; the entries follow, 1 << dk_log2_index_bytes later
  // PyDictValues: the values array; 3.13 puts capacity and valid bytes before it
  uint16_t values_array = 0;
  uint16_t values_capacity = kNoField;
  uint16_t values_valid = kNoField;
};

// The tables for CPython major.minor: 3.11 and 3.12 only (3.13 and later
// describe themselves: python_offsets_from_debug_offsets).
std::optional<PythonOffsets> python_offsets_for(int major, int minor);

// Versions of _Py_DebugOffsets this file can read: 3.13 only.
bool python_debug_offsets_known(int major, int minor);

// Bytes of _Py_DebugOffsets to read from _PyRuntime+0 (3.13's layout).
constexpr size_t kPythonDebugOffsetsSize = 73 * 8;

// Parses a 3.13 _Py_DebugOffsets (the first kPythonDebugOffsetsSize bytes of
// _PyRuntime). An error when the cookie is not "xdebugpy", the
// version it carries is not expected_hex's major.minor, the build is
// free-threaded (another frame layout), or an offset lies outside the size
// the struct gives for its object.
Result<PythonOffsets> python_offsets_from_debug_offsets(const void* bytes, size_t len, uint32_t expected_hex);

}  // namespace gpuprof
