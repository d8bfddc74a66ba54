// bracket_text.cpp: one walk through brackets and quotes for every cut.
#include "torch/bracket_text.h"

#include <cctype>

namespace gpuprof {
namespace {

// The bracket depth along a text, one character at a time.
class BracketWalk {
 public:
  explicit BracketWalk(const BracketSyntax& syntax) : syntax_(syntax) {}

  // Takes text[i] (moving i past an escaped character inside quotes);
  // whether it stands outside quotes, where it may be a bracket or a comma.
  bool step(std::string_view text, size_t& i) {
    const char c = text[i];
    if (quote_) {
      if (c == '\\') i++;
      else if (c == quote_) quote_ = 0;
      return false;
    }
    if (syntax_.quotes && (c == '"' || c == '\'')) {
      quote_ = c;
      return false;
    }
    if (syntax_.open.find(c) != std::string_view::npos) depth_++;
    else if (syntax_.close.find(c) != std::string_view::npos) depth_--;
    return true;
  }

  int depth() const { return depth_; }
  bool in_quote() const { return quote_ != 0; }

 private:
  const BracketSyntax& syntax_;
  int depth_ = 0;
  char quote_ = 0;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)); }

}  // namespace

std::string_view trim_spaces(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<std::vector<std::string_view>> split_top_level(std::string_view text, const BracketSyntax& syntax) {
  std::vector<std::string_view> parts;
  BracketWalk walk(syntax);
  size_t start = 0;
  for (size_t i = 0; i < text.size(); i++) {
    if (!walk.step(text, i)) continue;
    if (walk.depth() < 0) return std::nullopt;
    if (text[i] == ',' && walk.depth() == 0) {
      parts.push_back(trim_spaces(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (walk.depth() != 0 || walk.in_quote()) return std::nullopt;
  parts.push_back(trim_spaces(text.substr(start)));
  return parts;
}

size_t closing_bracket(std::string_view text, size_t open, const BracketSyntax& syntax) {
  BracketWalk walk(syntax);
  for (size_t i = open; i < text.size(); i++)
    if (walk.step(text, i) && walk.depth() == 0 && syntax.close.find(text[i]) != std::string_view::npos) return i;
  return std::string_view::npos;
}

}  // namespace gpuprof
