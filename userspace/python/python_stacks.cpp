#include "python/python_stacks.h"

#include <cstring>
#include <utility>

#include "op_tracer_abi.h"

namespace gpuprof {

namespace {

const std::string kUnknownModule = "nn.Module: [unknown]";

constexpr const char kModuleFile[] = "torch/nn/modules/module.py";
constexpr size_t kMaxTypeName = 256;

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

PythonStackNamer::PythonStackNamer(int pid, const PythonOffsets& offsets, PythonPathShortener paths)
    : pid_(pid), off_(offsets), code_(pid, offsets), paths_(std::move(paths)) {}

void PythonStackNamer::next_epoch() {
  code_.next_epoch();
  frames_.clear();
  functions_.clear();
  roles_.clear();
}

std::string PythonStackNamer::frame(uint64_t code, uint64_t instr) {
  const auto key = std::make_pair(code, instr);
  if (auto it = frames_.find(key); it != frames_.end()) return it->second;
  std::string text = "[unknown Python frame]";
  if (const PythonCodeInfo* info = code_.code(code)) {
    auto line = code_.line(code, instr);
    text = paths_.shorten(info->filename) + "(" + std::to_string(line ? *line : -1) + "): " + info->name;
  }
  return frames_.emplace(key, text).first->second;
}

std::string PythonStackNamer::function_frame(uint64_t code) {
  if (auto it = functions_.find(code); it != functions_.end()) return it->second;
  std::string text = "[unknown Python frame]";
  if (const PythonCodeInfo* info = code_.code(code))
    text = paths_.shorten(info->filename) + "(" + std::to_string(info->firstlineno) + "): " + info->name;
  return functions_.emplace(code, text).first->second;
}

PythonStackNamer::CodeRole PythonStackNamer::role(uint64_t code) {
  if (auto it = roles_.find(code); it != roles_.end()) return it->second;
  CodeRole found = CodeRole::plain;
  if (const PythonCodeInfo* info = code_.code(code); info && ends_with(info->filename, kModuleFile)) {
    if (info->name == "_call_impl") found = CodeRole::call_impl;
    if (info->name == "_wrapped_call_impl") found = CodeRole::wrapped_call_impl;
  }
  return roles_.emplace(code, found).first->second;
}

std::vector<std::string> PythonStackNamer::entry_stack(std::span<const uint64_t> words) {
  const size_t depth = words.size() / GP_ENTRY_FRAME_WORDS;
  std::vector<std::string> stack;
  stack.reserve(depth);
  std::vector<size_t> module_frames;  // indices of the module calls, innermost first
  for (size_t i = 0; i < depth; i++) {
    const uint64_t* f = &words[i * GP_ENTRY_FRAME_WORDS];
    CodeRole r = role(f[0]);
    // In torch 2.x nn.Module.__call__ is _wrapped_call_impl, which calls
    // _call_impl: only the outer one stands for the module call.
    if (r == CodeRole::call_impl && i + 1 < depth &&
        role(words[(i + 1) * GP_ENTRY_FRAME_WORDS]) == CodeRole::wrapped_call_impl)
      r = CodeRole::plain;
    stack.push_back(r == CodeRole::plain ? function_frame(f[0]) : module_entry(f[2]));
    if (r != CodeRole::plain) module_frames.push_back(i);
  }
  // Each module call in the one around it (the next module frame outwards).
  for (size_t k = 0; child_name_ && k + 1 < module_frames.size(); k++) {
    const size_t inner = module_frames[k], outer = module_frames[k + 1];
    const uint64_t child = words[inner * GP_ENTRY_FRAME_WORDS + 2];
    const uint64_t parent = words[outer * GP_ENTRY_FRAME_WORDS + 2];
    if (stack[inner] == kUnknownModule || stack[outer] == kUnknownModule) continue;
    if (!pairs_asked_.insert({parent, child}).second) continue;
    if (auto found = child_name_(parent, child))
      module_edges_.push_back({stack[outer], stack[inner], std::move(found->name), found->position});
  }
  return stack;
}

std::string PythonStackNamer::module_entry(uint64_t module) {
  if (auto it = modules_.find(module); it != modules_.end()) return it->second;
  auto cls = class_name(module);
  if (!cls) return kUnknownModule;  // not cached: the next read may work
  const uint32_t n = instances_of_class_[*cls]++;
  return modules_.emplace(module, "nn.Module: " + *cls + "_" + std::to_string(n)).first->second;
}

// type(object).__name__ as tp_name holds it for a class defined in Python;
// a `self` captured by a closure sits in a cell, which is looked through.
std::optional<std::string> PythonStackNamer::class_name(uint64_t object) {
  for (int hop = 0; hop < 2 && object; hop++) {
    uint64_t type = 0, name = 0;
    if (!read_target_memory(pid_, object + off_.object_type, &type, 8) || !type ||
        !read_target_memory(pid_, type + off_.type_name, &name, 8))
      return std::nullopt;
    auto text = read_c_string(name);
    if (!text) return std::nullopt;
    if (*text != "cell") {
      // A C type's tp_name is "module.Name"; __name__ is the last part.
      size_t dot = text->rfind('.');
      return dot == std::string::npos ? *text : text->substr(dot + 1);
    }
    if (!read_target_memory(pid_, object + off_.cell_ref, &object, 8)) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> PythonStackNamer::read_c_string(uint64_t address) {
  if (!address) return std::nullopt;
  std::string out;
  char chunk[64];
  while (out.size() < kMaxTypeName) {
    // Byte by byte at the end of a mapping would be safest; 64-byte reads
    // that fail are retried smaller so a name near a page end still reads.
    size_t len = sizeof(chunk);
    while (len > 0 && !read_target_memory(pid_, address + out.size(), chunk, len)) len /= 2;
    if (len == 0) return std::nullopt;
    const void* nul = std::memchr(chunk, '\0', len);
    if (nul) return out + std::string(chunk, static_cast<const char*>(nul) - chunk);
    out.append(chunk, len);
  }
  return std::nullopt;
}

}  // namespace gpuprof
