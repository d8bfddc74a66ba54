// trace_json.h: the pieces of JSON text the trace writers (chrome_trace,
// chrome_trace_several, speedscope) build their documents from, appended to
// a string as they go: escaped strings, exact microseconds, numbers. They
// run once or more per event of a trace, so they format without printf.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuprof {

// JSON string contents: quotes, backslashes and control characters escaped;
// bytes that are not valid UTF-8 become U+FFFD so that the document stays
// valid JSON whatever a symbol or path holds.
void append_json_string(std::string& out, std::string_view text);

// Appends `ns` as microseconds, exact to the nanosecond and without
// trailing zeros: "-0.25", "12.345", "17". Integer arithmetic: no rounding
// on the way.
void append_us(std::string& out, int64_t ns);
// The same written at p, which has room for kMaxUsChars; returns the end.
inline constexpr size_t kMaxUsChars = 26;  // "-", 20 digits, ".", 3 digits
char* put_us(char* p, int64_t ns);

// Copies a literal to p, its length known when compiling (so no copy call:
// the writers build a record's text in a local line and append it once);
// returns its end.
template <size_t N>
char* put_text(char* p, const char (&text)[N]) {
  std::memcpy(p, text, N - 1);
  return p + N - 1;
}

// Appends an integer in decimal.
template <typename T>
void append_number(std::string& out, T value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

}  // namespace gpuprof
