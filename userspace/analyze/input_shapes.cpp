#include "analyze/input_shapes.h"

namespace gpuprof {

std::string format_input_shapes(const InputShapes& shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); i++) {
    if (i) out += ", ";
    if (!shapes[i]) {
      out += kUnknownShapes;
      continue;
    }
    out += '[';
    for (size_t d = 0; d < shapes[i]->size(); d++) {
      if (d) out += ", ";
      out += std::to_string((*shapes[i])[d]);
    }
    out += ']';
  }
  return out + "]";
}

}  // namespace gpuprof
