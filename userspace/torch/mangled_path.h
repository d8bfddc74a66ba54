// mangled_path.h: the names of a mangled (Itanium ABI) nested name, read
// without a demangler: what the catalog needs to recognize a function by
// its namespaces, class and method (autograd_names.h, collective_names.h).
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpuprof {

// The <length><identifier> components of a mangled nested name, from just
// after "N" up to the first component that is not one; `rest` is left at
// what follows. Templates, substitutions and the like end the list.
inline std::vector<std::string_view> mangled_components(std::string_view& rest) {
  std::vector<std::string_view> out;
  while (!rest.empty() && rest[0] >= '1' && rest[0] <= '9') {
    size_t length = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), length);
    if (ec != std::errc()) break;
    const size_t digits = static_cast<size_t>(end - rest.data());
    if (length > rest.size() - digits) break;
    out.push_back(rest.substr(digits, length));
    rest.remove_prefix(digits + length);
  }
  return out;
}

}  // namespace gpuprof
