// cli/help_format.h: how `gpuprof COMMAND --help` reads, as `perf record -h`
// and `py-spy record --help` do: the description and usage, the examples
// first, then the options in named groups (Target, What to record, Output,
// Table, Advanced) with their descriptions wrapped to the terminal, then the
// notes. CLI11's own "Needs:"/"Excludes:" remarks are left out: each
// description says what it goes with ("with --schedule: ...").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuprof::cli {

// The width help is wrapped to: stdout's terminal width when it is one, else
// $COLUMNS, else 80; never under 60 or over 120.
size_t help_width();

// Splits text into lines of at most `width` columns at spaces (a word
// longer than that stands alone on its line), for a text that starts at
// column `indent`: each line after the first starts with `indent` spaces,
// counted in the width. Runs of spaces between words become one.
std::string wrap_text(const std::string& text, size_t width, size_t indent = 0);

class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(size_t width);

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
  // CLI11 2.1's make_groups() is not virtual: make_help() calls this instead.
  std::string ordered_groups(const CLI::App* app, CLI::AppFormatMode mode) const;
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_subcommand(const CLI::App* sub) const override;

 private:
  // "  NAME        description wrapped..." (the description on the next line
  // when the name reaches its column).
  std::string beside_name(const std::string& name, const std::string& description) const;
  size_t width_;
};

// The groups each command's options are shown in, in order; an option a
// command's list does not name goes to "Other options" (a unit test keeps
// that group empty). Call once every command is added.
void group_options_for_help(CLI::App& app);

// The names of the options of `command` (its long names, e.g. "--pid") that
// group_options_for_help() did not place; for the test.
std::vector<std::string> ungrouped_options(const CLI::App& command);

}  // namespace gpuprof::cli
