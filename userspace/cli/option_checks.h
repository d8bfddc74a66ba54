// cli/option_checks.h: the checks of option values that several commands
// share, with errors that say what is allowed (CLI11's own PositiveNumber
// printed a range up to DBL_MAX that included the rejected 0), and the
// parse error's pointer to the right --help.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace gpuprof::cli {

// A number of seconds above 0 (-d, --interval, --step-time).
CLI::Validator positive_seconds();

// -F of record and top: 1 Hz up to what the kernel allows now
// (kernel.perf_event_max_sample_rate, which the kernel lowers by itself
// when sampling takes too long): above it perf_event_open would refuse.
CLI::Validator sample_rate();
// Above 10 kHz the machine may not deliver the rate asked (100000 Hz on the
// reference VM gave ~37 kHz and thousands lost) and the target pays for
// every sample: says so on stderr.
void warn_if_high_sample_rate(unsigned hz);

// An option's value parsed with parse(value), which returns a Result
// (parse_sort_key, parse_folded_metric, ...): a value it refuses is
// reported on stderr as "gpuprof: error: ...", and comes back empty (the
// command exits 2).
template <typename Parse, typename Value>
auto parse_option_value(Parse parse, const Value& value) {
  auto parsed = parse(value);
  using Parsed = typename decltype(parsed)::value_type;
  if (!parsed) {
    std::fprintf(stderr, "gpuprof: error: %s\n", parsed.error().c_str());
    return std::optional<Parsed>();
  }
  return std::optional<Parsed>(std::move(parsed).value());
}

// The subcommand named in argv (the first argument that is one), or "".
std::string subcommand_in(int argc, char** argv, const std::vector<std::string>& names);
// The name of `names` nearest to `word` (a typo: at most 2 edits, or a
// prefix), or "" when none is near.
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace gpuprof::cli
