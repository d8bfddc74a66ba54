// file_mode.cpp: --mode parsing and applying it.
#include "base/file_mode.h"

#include <sys/stat.h>

namespace gpuprof {

Result<mode_t> parse_file_mode(std::string_view text) {
  mode_t mode = 0;
  bool ok = !text.empty() && text.size() <= 4;
  for (char c : text) {
    if (c < '0' || c > '7') ok = false;
    mode = mode * 8 + static_cast<mode_t>(c - '0');
  }
  if (!ok || mode > 0777)
    return Error("--mode " + std::string(text) + ": want octal permission bits such as 600 or 640 (at most 777)");
  return mode;
}

bool set_file_mode(int fd, mode_t mode) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) == mode) return true;
  return fchmod(fd, mode) == 0;
}

}  // namespace gpuprof
