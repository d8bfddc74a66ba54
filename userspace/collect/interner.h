// interner.h: the recording's one interner of frame names, stacks and
// kernel names, shared by every collector of a session (samples, entry
// stacks, launches, GPU activities).
//
// A name or stack gets its id when first used: the id is the count the
// sink had defined before (record_sink.h), and the definition goes to the
// sink at once, so that every record naming it follows it in the file.
// A definition the sink refuses is a write error (diagnostics.h): the
// frame or stack is not interned and its record is dropped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/live_consumer.h"
#include "record/record_sink.h"

namespace gpuprof {

class Interner {
 public:
  // live sees each frame name and stack as it is first defined (top's
  // live tables).
  Interner(RecordSink& sink, Diagnostics& diagnostics, LiveConsumer& live)
      : sink_(sink), diagnostics_(diagnostics), live_(live) {}
  // The session's live consumer, for what is recorded with these names.
  LiveConsumer& live() const { return live_; }

  std::optional<uint32_t> frame(const std::string& name);
  std::optional<uint32_t> stack(const std::vector<uint32_t>& frame_ids);
  // A stack of frame names, outermost first.
  std::optional<uint32_t> stack_of_names(const std::vector<std::string>& frames_outermost_first);
  // A kernel name, shared by launches and GPU activities. Its id stands
  // even when the sink refused the definition (the write error ends the
  // session).
  uint32_t launch_name(const std::string& name);

 private:
  // The id of key in ids. A key first seen gets next_id, and define()
  // writes its definition: one the sink refuses is said and not interned.
  template <typename Ids, typename Key, typename Define>
  std::optional<uint32_t> intern(Ids& ids, const Key& key, uint32_t next_id, Define define);

  RecordSink& sink_;
  Diagnostics& diagnostics_;
  LiveConsumer& live_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::map<std::vector<uint32_t>, uint32_t> stack_ids_;
  std::unordered_map<std::string, uint32_t> launch_name_ids_;
};

}  // namespace gpuprof
