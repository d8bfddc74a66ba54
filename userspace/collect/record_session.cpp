// record_session.cpp: run_record_session(), the one session with the
// target part the config names (record_session.h). Its own file, so that
// the session's base (session.cpp) knows none of its targets.
#include "collect/record_session.h"

#include "collect/process_session.h"
#include "collect/system_session.h"

namespace gpuprof {

RecordOutcome run_record_session(const RecordConfig& config) {
  return config.system_wide ? run_system_session(config) : run_process_session(config);
}

}  // namespace gpuprof
