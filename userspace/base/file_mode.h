// file_mode.h: the permissions of the files gpuprof writes (record files,
// traces): owner-only by default, `--mode OCTAL` otherwise.
#pragma once

#include "base/result.h"

#include <sys/types.h>

#include <string>
#include <string_view>

namespace gpuprof {

inline constexpr mode_t kDefaultFileMode = 0600;

// "600", "0644" -> the mode; an error for anything that is not octal
// permission bits (at most 0777: no setuid, setgid or sticky bit).
Result<mode_t> parse_file_mode(std::string_view text);

// Gives the open file `mode` exactly (whatever the umask, and whatever mode
// a file it truncated had) when it is a regular file; devices (/dev/null,
// /dev/stdout) and pipes are left alone. False with errno on failure.
bool set_file_mode(int fd, mode_t mode);

}  // namespace gpuprof
