// profile_checks.h: a streamed Profile against the whole read's, field by
// field, for the streamed outputs' tests (streamed aggregate, per-process
// tables).
#pragma once

#include <gtest/gtest.h>

#include "analyze/profile.h"

namespace gpuprof::test {

inline void expect_same_profile(const Profile& streamed, const Profile& whole) {
  ASSERT_EQ(streamed.rows.size(), whole.rows.size());
  for (size_t i = 0; i < whole.rows.size(); i++) EXPECT_EQ(streamed.rows[i], whole.rows[i]) << whole.rows[i].name;
  EXPECT_EQ(streamed.self_cpu_total_ns, whole.self_cpu_total_ns);
  EXPECT_EQ(streamed.counters.calls_unwound, whole.counters.calls_unwound);
  EXPECT_EQ(streamed.calls_cut, whole.calls_cut);
  EXPECT_EQ(streamed.events_after_cut, whole.events_after_cut);
  EXPECT_EQ(streamed.ranges_ended_elsewhere, whole.ranges_ended_elsewhere);
  EXPECT_EQ(streamed.counters.exits_without_entry, whole.counters.exits_without_entry);
  EXPECT_EQ(streamed.counters.calls_open_at_end, whole.counters.calls_open_at_end);
  EXPECT_EQ(streamed.events_unknown_kind, whole.events_unknown_kind);
  EXPECT_EQ(streamed.events_lost, whole.events_lost);
  EXPECT_EQ(streamed.threads, whole.threads);
  EXPECT_EQ(streamed.compensation, whole.compensation);
  EXPECT_EQ(streamed.raw_times_asked, whole.raw_times_asked);
  EXPECT_EQ(streamed.counters.calls_shorter_than_probes, whole.counters.calls_shorter_than_probes);
  EXPECT_EQ(streamed.gpu_recorded, whole.gpu_recorded);
  EXPECT_EQ(streamed.memory_recorded, whole.memory_recorded);
  EXPECT_EQ(streamed.grouped_by_input_shape, whole.grouped_by_input_shape);
}

}  // namespace gpuprof::test
