#include "python/python_offsets.h"

#include <cstring>

namespace gpuprof {

std::optional<PythonOffsets> python_offsets_for(int major, int minor) {
  // The fields that differ from PythonOffsets' defaults.
  static constexpr PythonOffsets k311 = {
      .tstate_cframe = 56, .cframe_current_frame = 8, .frame_code = 32, .frame_previous = 48,
      .frame_prev_instr = 56, .frame_is_entry = 68, .code_firstlineno = 72, .code_bytecode = 184,
      .str_ascii_data = 48, .str_compact_data = 72, .heap_type_cached_keys = 872,
      .managed_dict = PythonOffsets::ManagedDict::kValuesBeforeDict};
  static constexpr PythonOffsets k312 = {
      .tstate_cframe = 56, .cframe_current_frame = 0, .frame_code = 0, .frame_previous = 8,
      .frame_prev_instr = 56, .frame_owner = 70, .frame_owner_cshim = 3, .code_firstlineno = 68,
      .code_bytecode = 192, .str_ascii_data = 40, .str_compact_data = 56, .heap_type_cached_keys = 880,
      .managed_dict = PythonOffsets::ManagedDict::kTaggedDictOrValues};
  if (major != 3) return std::nullopt;
  if (minor == 11) return k311;
  if (minor == 12) return k312;
  return std::nullopt;
}

bool python_debug_offsets_known(int major, int minor) { return major == 3 && minor == 13; }

namespace {

// 3.13's _Py_DebugOffsets as uint64 words (Include/internal/pycore_runtime.h
// of 3.13: cookie, version, free_threaded, then one group per object, each
// group starting with the object's size).
enum DebugWord : size_t {
  kCookie = 0,
  kVersion = 1,
  kFreeThreaded = 2,
  kThreadSize = 19,
  kThreadCurrentFrame = 23,
  kFrameSize = 28,
  kFramePrevious = 29,
  kFrameExecutable = 30,
  kFrameInstrPtr = 31,
  kFrameLocalsplus = 32,
  kFrameOwner = 33,
  kCodeSize = 34,
  kCodeFilename = 35,
  kCodeName = 36,
  kCodeQualname = 37,
  kCodeLinetable = 38,
  kCodeFirstlineno = 39,
  kCodeAdaptive = 43,
  kObjectSize = 44,
  kObjectType = 45,
  kTypeSize = 46,
  kTypeName = 47,
  kTypeFlags = 49,
  kDictSize = 56,
  kDictKeys = 57,
  kDictValues = 58,
  kBytesSize = 64,
  kBytesObSize = 65,
  kBytesSval = 66,
  kUnicodeSize = 67,
  kUnicodeState = 68,
  kUnicodeLength = 69,
  kUnicodeAsciiSize = 70,
  kWords = 73,
};
static_assert(kWords * 8 == kPythonDebugOffsetsSize);

}  // namespace

Result<PythonOffsets> python_offsets_from_debug_offsets(const void* bytes, size_t len, uint32_t expected_hex) {
  if (len < kPythonDebugOffsetsSize) return Error("_Py_DebugOffsets is cut short");
  uint64_t w[kWords];
  std::memcpy(w, bytes, sizeof(w));
  if (std::memcmp(&w[kCookie], "xdebugpy", 8) != 0)
    return Error("_PyRuntime does not start with the _Py_DebugOffsets cookie \"xdebugpy\"");
  const uint64_t version = w[kVersion];
  if ((version >> 16) != (expected_hex >> 16))
    return Error("_Py_DebugOffsets says version " + std::to_string((version >> 24) & 0xff) + "." +
                 std::to_string((version >> 16) & 0xff) + ", not the file's");
  if (w[kFreeThreaded]) return Error("free-threaded CPython builds are not supported");
  // The fields it gives: each word, the word of its object's size, and the
  // PythonOffsets field it sets. Every field must lie inside its object: a
  // layout other than 3.13's would fail this. The flexible arrays
  // (co_code_adaptive, ob_sval, the ASCII data) are checked below.
  struct Field {
    size_t word, size_word;
    uint16_t PythonOffsets::*to;
    bool flexible_array = false;
  };
  using P = PythonOffsets;
  static constexpr Field kFields[] = {
      {kThreadCurrentFrame, kThreadSize, &P::tstate_cframe},
      {kFramePrevious, kFrameSize, &P::frame_previous},
      {kFrameExecutable, kFrameSize, &P::frame_code},
      {kFrameInstrPtr, kFrameSize, &P::frame_prev_instr},
      {kFrameLocalsplus, kFrameSize, &P::frame_localsplus},
      {kFrameOwner, kFrameSize, &P::frame_owner},
      {kCodeFilename, kCodeSize, &P::code_filename},
      {kCodeName, kCodeSize, &P::code_name},
      {kCodeQualname, kCodeSize, &P::code_qualname},
      {kCodeLinetable, kCodeSize, &P::code_linetable},
      {kCodeFirstlineno, kCodeSize, &P::code_firstlineno},
      {kObjectType, kObjectSize, &P::object_type},
      {kTypeName, kTypeSize, &P::type_name},
      {kTypeFlags, kTypeSize, &P::type_flags},
      {kDictKeys, kDictSize, &P::dict_keys},
      {kDictValues, kDictSize, &P::dict_values},
      {kBytesObSize, kBytesSize, &P::bytes_size},
      {kUnicodeState, kUnicodeSize, &P::str_state},
      {kUnicodeLength, kUnicodeSize, &P::str_length},
      {kCodeAdaptive, kCodeSize, &P::code_bytecode, true},
      {kBytesSval, kBytesSize, &P::bytes_data, true},
      {kUnicodeAsciiSize, kUnicodeSize, &P::str_ascii_data, true},
  };
  for (const Field& f : kFields) {
    if (f.flexible_array) continue;
    if (w[f.size_word] == 0 || w[f.size_word] >= PythonOffsets::kNoField ||
        w[f.word] >= w[f.size_word]) {
      return Error("_Py_DebugOffsets word " + std::to_string(f.word) + " (" + std::to_string(w[f.word]) +
                   ") is not inside its object (" + std::to_string(w[f.size_word]) +
                   " bytes): not 3.13's layout");
    }
  }
  // The flexible arrays (localsplus, co_code_adaptive, ob_sval) start at
  // their object's size or just before it.
  if (w[kCodeAdaptive] > w[kCodeSize] || w[kBytesSval] > w[kBytesSize] ||
      w[kUnicodeAsciiSize] > w[kUnicodeSize] || w[kUnicodeAsciiSize] == 0) {
    return Error("_Py_DebugOffsets: array offsets beyond their objects: not 3.13's layout");
  }
  PythonOffsets o;
  for (const Field& f : kFields) o.*f.to = static_cast<uint16_t>(w[f.word]);
  o.cframe_current_frame = PythonOffsets::kNoField;
  o.frame_owner_cshim = 3;  // FRAME_OWNED_BY_CSTACK
  // PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 pointer.
  o.str_compact_data = static_cast<uint16_t>(w[kUnicodeAsciiSize] + 16);
  // What _Py_DebugOffsets leaves out: 3.13's own (Include/cpython/object.h,
  // Include/internal/pycore_dict.h and pycore_object.h of 3.13, checked by
  // tests/unit/module_attributes_test.cpp on live interpreters). The cached keys
  // lie past the PyTypeObject, whose size the struct gives.
  o.heap_type_cached_keys = 880;
  if (o.heap_type_cached_keys < w[kTypeSize])
    return Error("_Py_DebugOffsets: PyTypeObject is " + std::to_string(w[kTypeSize]) +
                 " bytes, past 3.13's ht_cached_keys: not 3.13's layout");
  o.managed_dict = PythonOffsets::ManagedDict::kInlineValues;
  o.values_array = 8;
  o.values_capacity = 0;
  o.values_valid = 3;
  return o;
}

}  // namespace gpuprof
