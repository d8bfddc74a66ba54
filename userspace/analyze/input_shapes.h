// input_shapes.h: input shapes as torch.profiler prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

// What an argument, or a whole call, whose shapes gpuprof could not read
// prints as. Not a Python literal on purpose: it must not pass for data.
inline constexpr const char* kUnknownShapes = "?";

// Python's str() of torch's input_shapes list: "[[5, 3, 224, 224], [], []]";
// "[]" for no arguments; an unknown argument prints as "?".
std::string format_input_shapes(const InputShapes& shapes);

// torch's str(input_shapes) of one call, and whether it has any argument:
// its entry's shapes when recorded (shape_id), else "[]" for each argument
// of an op that records nothing per call (no tensor arguments), else "?"
// (not readable, or lost with a killed recorder). Each shape is formatted
// once.
class ShapeNames {
 public:
  // recording: its shapes and op table (kept by reference).
  explicit ShapeNames(const Recording& recording);
  std::pair<std::string, bool> of(uint32_t op_id, std::optional<uint32_t> shape_id) const;

 private:
  const Recording& recording_;
  std::vector<std::string> formatted_;                   // by shape id
  std::vector<std::optional<std::string>> static_shapes_;  // by op id
};

}  // namespace gpuprof
