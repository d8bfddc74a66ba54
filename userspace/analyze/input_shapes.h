// input_shapes.h: input shapes as torch.profiler prints them.
#pragma once

#include <string>

#include "record/recording.h"

namespace gpuprof {

// What an argument, or a whole call, whose shapes gpuprof could not read
// prints as. Not a Python literal on purpose: it must not pass for data.
inline constexpr const char* kUnknownShapes = "?";

// Python's str() of torch's input_shapes list: "[[5, 3, 224, 224], [], []]";
// "[]" for no arguments; an unknown argument prints as "?".
std::string format_input_shapes(const InputShapes& shapes);

}  // namespace gpuprof
