#include "cli/help_format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace gpuprof::cli {
namespace {

constexpr size_t kNameColumn = 30;  // where descriptions start
constexpr const char* kOtherGroup = "Other options";

// The groups of each command's options, in the order help shows them. An
// option is named by its first long name.
using Groups = std::vector<std::pair<std::string, std::vector<std::string>>>;
const std::map<std::string, Groups>& option_groups() {
  static const std::map<std::string, Groups> groups = {
      {"record",
       {{"Target", {"--pid", "--all-processes", "--follow-forks", "--duration"}},
        {"What to record",
         {"--freq", "--no-ops", "--inject-cupti", "--record-shapes", "--profile-memory", "--with-stack", "--with-modules", "--schedule", "--step-op",
          "--step-time"}},
        {"Output",
         {"--output", "--quiet", "--verbose", "--chrome-trace", "--time-range", "--ops", "--on-cycle", "--rotate",
          "--keep", "--mode"}},
        {"Push", {"--push", "--push-every", "--push-app"}},
        {"Table", {"--sort-by", "--row-limit", "--raw-times", "--group-by-input-shape", "--group-by-stack-n"}},
        {"Advanced", {"--ring-buffer", "--exit-mode", "--help"}}}},
      {"report",
       {{"What to print",
         {"--folded", "--metric", "--launches", "--kernels", "--chrome-trace", "--time-range", "--ops",
          "--speedscope", "--pprof", "--gpu", "--mode"}},
        {"Table", {"--sort-by", "--row-limit", "--raw-times", "--group-by-input-shape", "--group-by-stack-n"}},
        {"Modules", {"--modules", "--show-events", "--module-paths", "--depth"}},
        {"System-wide recordings", {"--pid", "--comm"}},
        {"Several recordings", {"--by"}},
        {"Advanced", {"--strict", "--help"}}}},
      {"top",
       {{"Target", {"--pid", "--all-processes"}},
        {"View", {"--interval", "--batch", "--iterations", "--sort-by", "--raw-times", "--lines", "--freq", "--with-modules",
                  "--modules", "--show-events"}},
        {"Advanced", {"--ring-buffer", "--help"}}}},
      {"calibrate", {{"Options", {"--repeat", "--help"}}}},
  };
  return groups;
}

std::string long_name(const CLI::Option* opt) {
  return opt->get_lnames().empty() ? opt->get_name() : "--" + opt->get_lnames().front();
}

// Where the examples start in a footer ("Examples:" on a line of its own).
size_t examples_at(const std::string& footer) {
  if (footer.rfind("Examples:", 0) == 0) return 0;
  const size_t at = footer.find("\nExamples:");
  return at == std::string::npos ? std::string::npos : at + 1;
}

// Paragraphs (split at blank lines) rejoined and wrapped to width.
std::string wrap_paragraphs(const std::string& text, size_t width) {
  std::string out;
  std::istringstream in(text);
  std::string line, paragraph;
  auto flush = [&] {
    if (paragraph.empty()) return;
    out += wrap_text(paragraph, width) + "\n";
    paragraph.clear();
  };
  while (std::getline(in, line)) {
    if (line.find_first_not_of(' ') == std::string::npos) {
      flush();
      out += "\n";
    } else {
      paragraph += (paragraph.empty() ? "" : " ") + line;
    }
  }
  flush();
  return out;
}

// Examples as written, but a line too long for the width with a trailing
// "  # comment" has the comment's padding cut to two spaces, and if that is
// not enough, the comment on a line of its own above it.
std::string fit_examples(const std::string& text, size_t width) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t comment = line.find("  # ");
    if (line.size() > width && comment != std::string::npos) {
      const size_t command_end = line.find_last_not_of(' ', comment) + 1;
      const size_t hash = line.find('#', comment);
      const std::string command = line.substr(0, command_end);
      const std::string remark = line.substr(hash);
      if (command.size() + 2 + remark.size() <= width) {
        line = command + "  " + remark;
      } else {
        out += line.substr(0, line.find_first_not_of(' ')) + remark + "\n";
        line = command;
      }
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

size_t help_width() {
  size_t width = 0;
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    width = ws.ws_col;
  } else if (const char* columns = std::getenv("COLUMNS")) {
    width = std::strtoul(columns, nullptr, 10);
  }
  if (width == 0) width = 80;
  return std::clamp<size_t>(width, 60, 120);
}

std::string wrap_text(const std::string& text, size_t width, size_t indent) {
  std::string out;
  size_t column = indent;  // the first line too starts there
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (out.empty()) {
      out = word;
      column += word.size();
    } else if (column + 1 + word.size() <= width) {
      out += ' ' + word;
      column += 1 + word.size();
    } else {
      out += '\n' + std::string(indent, ' ') + word;
      column = indent + word.size();
    }
  }
  return out;
}

HelpFormatter::HelpFormatter(size_t width) : width_(width) { column_width(kNameColumn); }

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  const std::string footer = app->get_footer();
  const size_t examples = examples_at(footer);
  std::string out = wrap_paragraphs(app->get_description(), width_);
  out += make_usage(app, name);
  if (examples != std::string::npos) out += "\n" + fit_examples(footer.substr(examples), width_);
  out += make_positionals(app);
  out += ordered_groups(app, mode);
  out += make_subcommands(app, mode);
  const std::string notes = footer.substr(0, examples == std::string::npos ? footer.size() : examples);
  if (notes.find_first_not_of(" \n") != std::string::npos) out += "\n" + wrap_paragraphs(notes, width_);
  return out;
}

std::string HelpFormatter::ordered_groups(const CLI::App* app, CLI::AppFormatMode mode) const {
  // The command's groups in the order of its table, then any other.
  std::vector<std::string> order;
  if (auto it = option_groups().find(app->get_name()); it != option_groups().end())
    for (const auto& [group, names] : it->second) order.push_back(group);
  for (const std::string& group : app->get_groups())
    if (std::find(order.begin(), order.end(), group) == order.end()) order.push_back(group);
  std::string out;
  for (const std::string& group : order) {
    std::vector<const CLI::Option*> opts = app->get_options([&](const CLI::Option* opt) {
      return opt->get_group() == group && opt->nonpositional() &&
             (mode != CLI::AppFormatMode::Sub || (app->get_help_ptr() != opt && app->get_help_all_ptr() != opt));
    });
    if (!group.empty() && !opts.empty()) out += make_group(group, false, opts);
  }
  return out;
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  return beside_name("  " + make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt));
}

std::string HelpFormatter::beside_name(const std::string& name, const std::string& description) const {
  const std::string desc = wrap_text(description, width_, kNameColumn);
  // The description beside the name when it fits, else on the next line.
  if (name.size() + 2 <= kNameColumn) return name + std::string(kNameColumn - name.size(), ' ') + desc + "\n";
  return name + "\n" + std::string(kNameColumn, ' ') + desc + "\n";
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return beside_name("  " + sub->get_name(), sub->get_description());
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  std::string out;
  if (opt->get_type_size() == 0) return out;
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  // The value's name: of CLI11's "TYPE:VALIDATOR" text ("UINT:HZ",
  // "SECONDS:FLOAT in [0.001 - 86400]"), the first part that is not a bare
  // C++ type, without a range (the description gives it); a name with no
  // such type in it ("START:END") as it is.
  const std::string name = opt->get_type_name();
  std::vector<std::string> parts;
  std::istringstream split(name);
  for (std::string part; std::getline(split, part, ':');) {
    if (const size_t in = part.find(" in ["); in != std::string::npos) part = part.substr(0, in);
    parts.push_back(part);
  }
  auto generic = [](const std::string& t) { return t == "INT" || t == "UINT" || t == "FLOAT" || t == "TEXT"; };
  std::string type = name;
  if (std::any_of(parts.begin(), parts.end(), generic)) {
    auto named = std::find_if_not(parts.begin(), parts.end(), generic);
    type = named != parts.end() ? *named : parts.front();
  }
  if (!type.empty()) out += " " + type;
  if (!opt->get_default_str().empty()) out += " (default " + opt->get_default_str() + ")";
  if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
  return out;
}

void group_options_for_help(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    std::map<std::string, std::string> group_of;
    if (auto it = option_groups().find(command->get_name()); it != option_groups().end())
      for (const auto& [group, names] : it->second)
        for (const std::string& name : names) group_of[name] = group;
    for (CLI::Option* opt : command->get_options([](CLI::Option* o) { return o->nonpositional(); })) {
      auto it = group_of.find(long_name(opt));
      opt->group(it == group_of.end() ? kOtherGroup : it->second);
    }
  }
}

std::vector<std::string> ungrouped_options(const CLI::App& command) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : command.get_options([](const CLI::Option* o) { return o->nonpositional(); }))
    if (opt->get_group() == kOtherGroup) out.push_back(long_name(opt));
  return out;
}

}  // namespace gpuprof::cli
