// native_files.h: the native files a symbolizer opened to name samples'
// frames, into the record (NATIVE_FILES, record_file.h), so that pprof
// gives each native frame's mapping its path and build id (output/pprof.h).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "record/recording.h"
#include "symbols/native_symbolizer.h"

namespace gpuprof {

// What `symbolizer` opened since the last call, as the record's entries of
// its process; writer: RecordOutputs (both sessions write through one).
template <class Writer>
Result<void> record_opened_files(NativeSymbolizer& symbolizer, Writer& writer) {
  std::vector<NativeFile> files;
  for (auto& opened : symbolizer.take_opened_files())
    if (opened.path.starts_with("/"))
      files.push_back({.pid = symbolizer.pid(), .path = std::move(opened.path), .build_id = std::move(opened.build_id)});
  if (files.empty()) return {};
  return writer.add_native_files(files);
}

}  // namespace gpuprof
