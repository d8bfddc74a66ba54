#include "torch/op_names.h"

#include <cctype>
#include <charconv>

#include "torch/bracket_text.h"

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

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)); }

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
  // Not `sym.size() < length + suffix.size()`: a length near SIZE_MAX wraps
  // that sum (fuzzer-found: tests/fuzz/regressions/symbol_parsers/).
  if (length > sym.size() || sym.size() - length < suffix.size()) return std::nullopt;
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

std::optional<Schema> parse_full_schema(std::string_view text) {
  auto op = parse_schema(text);
  if (!op) return std::nullopt;
  // The argument list runs from the '(' after the name to its match (only
  // parentheses count here; split_top_level checks the other brackets).
  constexpr BracketSyntax kParentheses{"(", ")", true};
  const size_t open = text.find('(');
  const size_t close = closing_bracket(text, open, kParentheses);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = trim_spaces(text.substr(close + 1));
  if (!rest.starts_with("->")) return std::nullopt;
  Schema schema;
  schema.op = std::move(*op);
  schema.returns = std::string(trim_spaces(rest.substr(2)));
  if (schema.returns.empty()) return std::nullopt;
  std::string_view args = trim_spaces(text.substr(open + 1, close - open - 1));
  if (!args.empty()) {
    auto parts = split_top_level(args, kSchemaBrackets);
    if (!parts) return std::nullopt;
    for (std::string_view part : *parts) {
      if (part.empty()) return std::nullopt;
      if (part != "*") schema.arguments.emplace_back(part);
    }
  }
  return schema;
}

std::string_view schema_argument_type(std::string_view argument) {
  argument = trim_spaces(argument);
  int depth = 0;
  for (size_t i = 0; i < argument.size(); i++) {
    const char c = argument[i];
    if (c == '(' || c == '[') depth++;
    else if (c == ')' || c == ']') depth--;
    else if (depth == 0 && (is_space(c) || c == '='))
      return argument.substr(0, i);
  }
  return argument;
}

void OpNameResolver::add_schema(const Schema& schema) {
  add_schema(schema.op);
  std::vector<Schema>& known = full_by_struct_[struct_name_of(schema.op)];
  for (const Schema& s : known)
    if (s == schema) return;
  known.push_back(schema);
}

const std::vector<Schema>& OpNameResolver::schemas(std::string_view struct_name) const {
  static const std::vector<Schema> none;
  auto it = full_by_struct_.find(std::string(struct_name));
  return it == full_by_struct_.end() ? none : it->second;
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
