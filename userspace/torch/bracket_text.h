// bracket_text.h: the text of operator schemas and of demangled C++
// signatures, cut at the commas between their arguments.
//
// Both nest brackets, but not the same ones: a schema's alias annotations
// ("Tensor(a -> *)") hold a lone '>', so <> do not nest there, while C++
// template arguments do; and a schema's default values may be quoted strings,
// whose brackets and commas are text, while a demangled signature has none.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace gpuprof {

struct BracketSyntax {
  std::string_view open;   // brackets that nest, matched by count, not by kind
  std::string_view close;
  bool quotes = false;  // '...' and "..." (with \ escapes) hide brackets and commas
};

// Operator schemas: (), [] and {} nest; quoted default values.
inline constexpr BracketSyntax kSchemaBrackets{"([{", ")]}", true};
// Demangled C++ parameter lists: <>, () and [] nest.
inline constexpr BracketSyntax kCppBrackets{"<([", ">)]", false};

// Without leading and trailing white space.
std::string_view trim_spaces(std::string_view text);

// Splits text at the commas outside brackets (and quotes); nullopt when the
// brackets do not balance or a quote is left open. Empty pieces are kept
// (trimmed).
std::optional<std::vector<std::string_view>> split_top_level(std::string_view text, const BracketSyntax& syntax);

// The index of the bracket that closes the one at text[open]; npos when none
// does.
size_t closing_bracket(std::string_view text, size_t open, const BracketSyntax& syntax);

}  // namespace gpuprof
