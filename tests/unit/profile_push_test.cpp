// record --push's request line (cli/profile_push.h): the ingest URL a
// recording's profile is POSTed to, as Pyroscope's HTTP API reads it.
#include "cli/profile_push.h"

#include <gtest/gtest.h>

namespace gpuprof::cli {
namespace {

Recording one_process(const std::string& comm) {
  Recording r;
  r.process.pid = 4242;
  r.process.comm = comm;
  r.process.hostname = "node7";
  r.clock.start_monotonic_ns = 1'000'000'000;
  r.clock.start_realtime_ns = 1'700'000'000'250'000'000;  // .25 s past a second
  r.clock.end_monotonic_ns = 11'500'000'000;               // 10.5 s later
  return r;
}

TEST(IngestUrl, NameLabelsAndTheCyclesSpanInUnixSeconds) {
  const Recording r = one_process("python3");
  // from: rounded down; until: the end, rounded up; name URL-escaped.
  EXPECT_EQ(ingest_url({"http://pyroscope:4040/", ""}, r),
            "http://pyroscope:4040/ingest?name=gpuprof.python3%7Bpid%3D4242%2Ccomm%3Dpython3%2Chostname%3Dnode7%7D"
            "&from=1700000000&until=1700000011&format=pprof&spyName=gpuprof");
}

TEST(IngestUrl, RankLabelsAndSampleRateWhenRecorded) {
  Recording r = one_process("python3");
  r.options.sample_hz = 99;
  r.job_ranks.push_back({.pid = 4242, .rank = 1, .local_rank = 1, .world_size = 2});
  EXPECT_EQ(ingest_url({"https://h", "train.cpu"}, r),
            "https://h/ingest?name=train.cpu%7Bpid%3D4242%2Ccomm%3Dpython3%2Chostname%3Dnode7%2Crank%3D1%2C"
            "local_rank%3D1%2Cworld_size%3D2%7D&from=1700000000&until=1700000011&format=pprof&spyName=gpuprof"
            "&sampleRate=99");
}

TEST(IngestUrl, LabelValuesCannotBreakTheNameSyntax) {
  // A comm may hold anything Pyroscope's name syntax uses: each becomes _.
  const Recording r = one_process("a,b=c {d}");
  const std::string url = ingest_url({"http://h", "app"}, r);
  EXPECT_NE(url.find("comm%3Da_b_c__d_%2C"), std::string::npos) << url;
  EXPECT_NE(url.find("name=app%7Bpid"), std::string::npos) << url;
}

}  // namespace
}  // namespace gpuprof::cli
