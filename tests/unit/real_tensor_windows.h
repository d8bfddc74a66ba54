// real_tensor_windows.h: real TensorImpl memory from torch 1.13, read from
// tests/data/tensorimpl_windows_torch1.13.txt (written by
// tests/data/make_tensorimpl_windows.py), for the unit tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/result.h"
#include "torch/tensor_layout.h"
#include "test_files.h"

namespace gpuprof::test {

// One line of the data file.
struct RealTensorWindow {
  std::string name;
  bool undefined = false;      // c10::UndefinedTensorImpl::_singleton: no sizes
  std::vector<int64_t> sizes;  // as torch reports them; empty when undefined
  RawWindow window{};          // the first GP_RAW_WINDOW_WORDS words of the TensorImpl
};

inline std::filesystem::path real_tensor_windows_path() {
  return test_data_dir() / "tensorimpl_windows_torch1.13.txt";
}

// The whole of `number` as a decimal integer; false if it is not one.
inline bool parse_whole_int(const std::string& number, int64_t* out) {
  size_t used = 0;
  try {
    *out = std::stoll(number, &used);
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
    return false;
  }
  return used == number.size();
}
// The whole of `word` as a hex number; false if it is not one.
inline bool parse_whole_hex_word(const std::string& word, uint64_t* out) {
  size_t used = 0;
  try {
    *out = std::stoull(word, &used, 16);
  } catch (const std::logic_error&) {
    return false;
  }
  return used == word.size();
}

// Lines: name \t [s0,s1,...] or "undefined" \t GP_RAW_WINDOW_WORDS words in
// hex. Blank lines and lines starting with '#' are skipped. The records come
// in file order; on malformed input, an error says what was wrong, on one
// line.
inline Result<std::vector<RealTensorWindow>> load_real_tensor_windows(
    const std::filesystem::path& path = real_tensor_windows_path()) {
  std::ifstream in(path);
  if (!in) return Error("cannot read " + path.string());
  std::vector<RealTensorWindow> records;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    RealTensorWindow r;
    std::string sizes, words;
    if (!std::getline(fields, r.name, '\t') || !std::getline(fields, sizes, '\t') ||
        !std::getline(fields, words)) {
      return Error("bad line: " + line);
    }
    if (sizes == "undefined") {
      r.undefined = true;
    } else {
      if (sizes.size() < 2 || sizes.front() != '[' || sizes.back() != ']') return Error("bad sizes: " + line);
      std::istringstream list(sizes.substr(1, sizes.size() - 2));
      std::string item;
      while (std::getline(list, item, ',')) {
        int64_t size = 0;
        if (!parse_whole_int(item, &size)) return Error("bad sizes: " + line);
        r.sizes.push_back(size);
      }
    }
    std::istringstream hex(words);
    size_t n = 0;
    std::string word;
    while (hex >> word) {
      if (n == GP_RAW_WINDOW_WORDS) return Error("wrong word count: " + line);
      if (!parse_whole_hex_word(word, &r.window[n++])) return Error("bad hex word '" + word + "': " + line);
    }
    if (n != GP_RAW_WINDOW_WORDS) return Error("wrong word count: " + line);
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace gpuprof::test
