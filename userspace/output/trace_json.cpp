// trace_json.cpp: JSON text pieces (see the header).
#include "output/trace_json.h"

#include <cstdio>

#include "base/utf8.h"

namespace gpuprof {

void append_json_string(std::string& out, std::string_view text) {
  // Runs of characters that need no escape are appended whole: op names
  // and frames are almost always one such run.
  auto plain = [](unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; };
  for (size_t i = 0; i < text.size();) {
    size_t run = i;
    while (run < text.size() && plain(static_cast<unsigned char>(text[run]))) ++run;
    out.append(text.substr(i, run - i));
    if (run == text.size()) return;
    i = run;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      if (size_t length = utf8_sequence_length(text, i)) {
        out.append(text.substr(i, length));
        i += length;
      } else {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {  // below 0x20, or 0x7F
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    }
    ++i;
  }
}

char* put_us(char* p, int64_t ns) {
  if (ns < 0) {
    *p++ = '-';
    ns = -ns;  // recordings are far from INT64_MIN
  }
  const auto whole = static_cast<uint64_t>(ns) / 1000;
  int fraction = static_cast<int>(static_cast<uint64_t>(ns) % 1000);
  p = std::to_chars(p, p + 20, whole).ptr;
  if (fraction != 0) {
    *p++ = '.';
    *p++ = static_cast<char>('0' + fraction / 100);
    fraction %= 100;
    if (fraction != 0) {
      *p++ = static_cast<char>('0' + fraction / 10);
      if (fraction % 10 != 0) *p++ = static_cast<char>('0' + fraction % 10);
    }
  }
  return p;
}

void append_us(std::string& out, int64_t ns) {
  char buffer[kMaxUsChars];
  out.append(buffer, put_us(buffer, ns));
}

}  // namespace gpuprof
