// module_table.cpp: torchprof's layer table (module_table.h).
#include "output/module_table.h"

#include <algorithm>
#include <set>

#include "output/op_table.h"

namespace gpuprof {
namespace {

// Columns on a terminal: the tree's box-drawing characters are one each.
size_t display_width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string time_cell(uint64_t ns) { return format_time_us(ns / 1000.0); }

// Which of torchprof's columns the recording fills: CUDA time with the CUPTI
// shim's records, memory with --profile-memory (CUDA memory when the
// recording saw any, or has GPU records).
struct Columns {
  bool cuda_time = false, cpu_mem = false, cuda_mem = false;

  explicit Columns(const ModuleTree& tree) {
    cuda_time = tree.gpu_recorded;
    cpu_mem = tree.memory_recorded;
    bool cuda_bytes = false;
    for (const ModuleNode& n : tree.nodes) cuda_bytes = cuda_bytes || n.figures.cuda_mem != 0 || n.figures.self_cuda_mem != 0;
    cuda_mem = tree.memory_recorded && (tree.gpu_recorded || cuda_bytes);
  }

  std::vector<std::string> header() const {
    std::vector<std::string> h = {"Module", "Self CPU total", "CPU total"};
    if (cuda_time) h.insert(h.end(), {"Self CUDA total", "CUDA total"});
    if (cpu_mem) h.insert(h.end(), {"Self CPU Mem", "CPU Mem"});
    if (cuda_mem) h.insert(h.end(), {"Self CUDA Mem", "CUDA Mem"});
    h.push_back("Number of Calls");
    return h;
  }

  // A row: its name, self and total time, its figures (nullptr: a place
  // drawn without figures), its calls ("" for none).
  std::vector<std::string> row(std::string name, uint64_t self_ns, uint64_t total_ns, const ModuleFigures* f,
                               std::string calls) const {
    std::vector<std::string> r = {std::move(name), f ? time_cell(self_ns) : "", f ? time_cell(total_ns) : ""};
    if (cuda_time) r.insert(r.end(), {f ? time_cell(f->self_cuda_ns) : "", f ? time_cell(f->cuda_ns) : ""});
    if (cpu_mem) r.insert(r.end(), {f ? format_memory(f->self_cpu_mem) : "", f ? format_memory(f->cpu_mem) : ""});
    if (cuda_mem) r.insert(r.end(), {f ? format_memory(f->self_cuda_mem) : "", f ? format_memory(f->cuda_mem) : ""});
    r.push_back(f ? std::move(calls) : "");
    return r;
  }
};

class TableBuilder {
 public:
  TableBuilder(const ModuleTree& tree, const ModuleTableOptions& options, const Columns& columns)
      : tree_(tree), options_(options), columns_(columns) {
    for (size_t i = 0; i < tree.nodes.size(); i++) {
      const std::string path = tree.path(i);
      for (const std::string& wanted : options.paths) {
        if (path == wanted || path.starts_with(wanted + ".")) shown_with_figures_.insert(i);
        if (wanted.starts_with(path + ".")) shown_as_place_.insert(i);
      }
    }
  }

  std::vector<std::vector<std::string>> rows() {
    std::vector<size_t> tops;
    for (size_t top : tree_.tops)
      if (shown(top)) tops.push_back(top);
    for (size_t k = 0; k < tops.size(); k++) add_node(tops[k], "", true, k + 1 == tops.size());
    return std::move(rows_);
  }

 private:
  bool shown(size_t node) const {
    if (options_.depth >= 0 && tree_.nodes[node].depth > static_cast<uint32_t>(options_.depth)) return false;
    return options_.paths.empty() || shown_with_figures_.count(node) || shown_as_place_.count(node);
  }
  bool with_figures(size_t node) const { return options_.paths.empty() || shown_with_figures_.count(node); }

  // `lead`: the ancestors' columns (a `│` for each with siblings after it,
  // else a space), top nodes drawn without any.
  void add_node(size_t id, const std::string& lead, bool top, bool last) {
    const ModuleNode& n = tree_.nodes[id];
    const std::string branch = top ? "" : (last ? "└── " : "├── ");
    rows_.push_back(columns_.row(lead + branch + n.name, n.self_ns, n.total_ns,
                                 with_figures(id) ? &n.figures : nullptr,
                                 n.label.empty() ? "" : std::to_string(n.calls)));
    const std::string below = top ? "" : lead + (last ? " " : "│");
    std::vector<size_t> children;
    for (size_t c : n.children)
      if (shown(c)) children.push_back(c);
    const bool events = options_.show_events && with_figures(id);
    if (events)
      for (size_t k = 0; k < n.ops.size(); k++) {
        const ModuleOpRow& op = n.ops[k];
        const bool last_row = k + 1 == n.ops.size() && children.empty();
        rows_.push_back(columns_.row(below + (last_row ? "└── " : "├── ") + op.name, op.self_ns, op.total_ns,
                                     &op.figures, std::to_string(op.calls)));
      }
    for (size_t k = 0; k < children.size(); k++) add_node(children[k], below, false, k + 1 == children.size());
  }

  const ModuleTree& tree_;
  const ModuleTableOptions& options_;
  const Columns& columns_;
  std::set<size_t> shown_with_figures_, shown_as_place_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

// torchprof's layout: cells left-aligned and padded to their column, joined
// by " | "; under the header a rule of dashes joined by "|".
std::string format_module_table(const ModuleTree& tree, const ModuleTableOptions& options) {
  const Columns columns(tree);
  std::vector<std::vector<std::string>> rows = {columns.header()};
  for (auto& row : TableBuilder(tree, options, columns).rows()) rows.push_back(std::move(row));
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); c++) widths[c] = std::max(widths[c], display_width(row[c]));
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < row.size(); c++) {
      if (c) out += " | ";
      out += row[c];
      if (c + 1 < row.size()) out.append(widths[c] - display_width(row[c]), ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(rows[0]);
  for (size_t c = 0; c < widths.size(); c++) {
    if (c) out += "|";
    out.append(widths[c] + (c == 0 || c + 1 == widths.size() ? 1 : 2), '-');
  }
  out += "\n";
  for (size_t r = 1; r < rows.size(); r++) out += line(rows[r]);
  return out;
}

std::vector<std::string> unknown_module_paths(const ModuleTree& tree, const std::vector<std::string>& paths) {
  std::set<std::string> known;
  for (size_t i = 0; i < tree.nodes.size(); i++) known.insert(tree.path(i));
  std::vector<std::string> unknown;
  for (const std::string& p : paths)
    if (!known.count(p)) unknown.push_back(p);
  return unknown;
}

}  // namespace gpuprof
