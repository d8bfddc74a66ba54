#include "op_names.h"

#include <cctype>
#include <charconv>

namespace gpuprof {
namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Reads an identifier at the front of text; empty when there is none.
std::string_view take_identifier(std::string_view& text) {
  size_t n = 0;
  while (n < text.size() && is_identifier_char(text[n])) n++;
  std::string_view id = text.substr(0, n);
  text.remove_prefix(n);
  return id;
}

std::string struct_name_of(const OpName& op) {
  return op.overload.empty() ? op.name : op.name + "_" + op.overload;
}

}  // namespace

std::optional<std::string_view> dispatcher_call_struct(std::string_view sym) {
  constexpr std::string_view prefix = "_ZN2at4_ops";
  constexpr std::string_view suffix = "4callE";
  // Compiler clones (".cold", ".isra.0", ".part.0", ".constprop.0") are
  // pieces of a body, not entry points: their first instruction is not a call.
  if (!sym.starts_with(prefix) || sym.find('.') != std::string_view::npos) return std::nullopt;
  sym.remove_prefix(prefix.size());
  size_t length = 0;
  auto [end, ec] = std::from_chars(sym.data(), sym.data() + sym.size(), length);
  if (ec != std::errc() || length == 0) return std::nullopt;
  sym.remove_prefix(end - sym.data());
  if (sym.size() < length + suffix.size()) return std::nullopt;
  std::string_view name = sym.substr(0, length);
  if (!sym.substr(length).starts_with(suffix)) return std::nullopt;
  return name;
}

std::optional<OpName> parse_schema(std::string_view text) {
  if (text.starts_with("aten::")) text.remove_prefix(6);
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  OpName op;
  op.name = std::string(take_identifier(text));
  if (op.name.empty()) return std::nullopt;
  if (!text.empty() && text[0] == '.') {
    text.remove_prefix(1);
    op.overload = std::string(take_identifier(text));
    if (op.overload.empty()) return std::nullopt;
  }
  // A schema is name(args) -> returns; demand both parts so that ordinary
  // strings such as "foo(bar)" in error messages are not taken for one.
  if (text.empty() || text[0] != '(' || text.find(") -> ") == std::string_view::npos)
    return std::nullopt;
  return op;
}

void OpNameResolver::add_schema(const OpName& op) {
  by_struct_.emplace(struct_name_of(op), op);
  names_.insert(op.name);
}

OpName OpNameResolver::resolve(std::string_view struct_name) const {
  if (auto it = by_struct_.find(std::string(struct_name)); it != by_struct_.end())
    return it->second;
  // Longest known prefix: for "a_b_c" try "a_b" then "a".
  for (size_t cut = struct_name.rfind('_'); cut != std::string_view::npos && cut > 0;
       cut = struct_name.rfind('_', cut - 1)) {
    std::string_view name = struct_name.substr(0, cut);
    std::string_view overload = struct_name.substr(cut + 1);
    if (!overload.empty() && names_.count(std::string(name)))
      return OpName{std::string(name), std::string(overload)};
    if (cut == 0) break;
  }
  return OpName{std::string(struct_name), ""};
}

}  // namespace gpuprof
