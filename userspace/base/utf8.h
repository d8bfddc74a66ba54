// utf8.h: UTF-8 checks for the text outputs (JSON traces, folded stacks),
// whose names come from target memory, ELF files and /proc and may hold
// any bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuprof {

// The length of the valid UTF-8 sequence starting at text[i] (a byte >=
// 0x80), 0 when invalid (overlong, surrogate, above U+10FFFF, cut short).
size_t utf8_sequence_length(std::string_view text, size_t i);

// `text` with every byte that starts no valid sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace gpuprof
