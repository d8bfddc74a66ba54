// Tests of the help layout: wrapping, and every option of every command in
// a named group (a new option must be given one).
#include "cli/help_format.h"

#include <gtest/gtest.h>

#include "cli/calibrate.h"
#include "cli/record.h"
#include "cli/report.h"
#include "cli/top.h"

namespace gpuprof::cli {
namespace {

TEST(HelpFormat, WrapsAtSpacesToTheWidthIndentingLaterLines) {
  EXPECT_EQ(wrap_text("one two three four", 9), "one two\nthree\nfour");
  // The text starts at column 4: its first line has 5 columns left.
  EXPECT_EQ(wrap_text("ab cd ef", 9, 4), "ab cd\n    ef");
  // A word longer than the width stands alone; runs of spaces become one.
  EXPECT_EQ(wrap_text("a   verylongword b", 6), "a\nverylongword\nb");
  EXPECT_EQ(wrap_text("", 10), "");
}

TEST(HelpFormat, EveryOptionOfEveryCommandHasAGroup) {
  CLI::App app;
  RecordOptions record;
  ReportOptions report;
  TopOptions top;
  CalibrateOptions calibrate;
  add_record_command(app, record);
  add_report_command(app, report);
  add_top_command(app, top);
  add_calibrate_command(app, calibrate);
  group_options_for_help(app);
  for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; }))
    EXPECT_EQ(ungrouped_options(*command), std::vector<std::string>{}) << command->get_name();
}

TEST(HelpFormat, ExamplesComeFirstAndTooLongCommentsMoveAbove) {
  CLI::App app{"Does a thing", "tool"};
  app.formatter(std::make_shared<HelpFormatter>(60));
  bool flag = false;
  app.add_flag("--flag", flag, "a flag whose description is long enough to need a second line here");
  app.footer("Notes about it.\nExamples:\n  tool --flag                       # short\n"
             "  tool --flag --flag --flag --flag --flag --flag  # a remark too long for one line\n");
  const std::string help = app.help();
  EXPECT_EQ(help,
            "Does a thing\n"
            "Usage: tool [OPTIONS]\n"
            "\n"
            "Examples:\n"
            "  tool --flag                       # short\n"
            "  # a remark too long for one line\n"
            "  tool --flag --flag --flag --flag --flag --flag\n"
            "\n"
            "Options:\n"
            "  -h,--help                   Print this help message and\n"
            "                              exit\n"
            "  --flag                      a flag whose description is\n"
            "                              long enough to need a second\n"
            "                              line here\n"
            "\n"
            "Notes about it.\n");
}

}  // namespace
}  // namespace gpuprof::cli
