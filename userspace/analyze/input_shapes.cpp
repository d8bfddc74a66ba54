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

ShapeNames::ShapeNames(const Recording& recording) : recording_(recording) {
  formatted_.reserve(recording.shapes.size());
  for (const InputShapes& shapes : recording.shapes) formatted_.push_back(format_input_shapes(shapes));
  // Ops that record nothing per call have one string for all their calls.
  static_shapes_.resize(recording.ops.size());
  for (size_t op = 0; op < recording.ops.size(); op++) {
    const OpInfo& info = recording.ops[op];
    if (info.arg_count >= 0 && info.tensor_args == 0)
      static_shapes_[op] = format_input_shapes(InputShapes(info.arg_count, ArgShape(std::vector<int64_t>{})));
  }
}

std::pair<std::string, bool> ShapeNames::of(uint32_t op_id, std::optional<uint32_t> shape_id) const {
  if (shape_id && *shape_id < formatted_.size())
    return {formatted_[*shape_id], !recording_.shapes[*shape_id].empty()};
  if (op_id < static_shapes_.size() && static_shapes_[op_id])  // nothing read per call: all []
    return {*static_shapes_[op_id], recording_.ops[op_id].arg_count > 0};
  return {kUnknownShapes, true};  // not readable, or lost with a killed recorder
}

}  // namespace gpuprof
