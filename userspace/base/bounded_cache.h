// bounded_cache.h: the caches in front of interned frame names and stacks
// are keyed by instruction addresses, which vary without end (a sample's
// leaf lands anywhere in a function, a kernel stack's leaf too): each is
// emptied when it holds `limit` entries, so the collector's memory stays
// bounded for any run length (docs/long-runs.md): a few MiB each at most.
// The ids they map to stay valid: names and stacks are interned for the
// whole recording, and a forgotten address is resolved again to the same id.
#pragma once

#include <cstddef>

namespace gpuprof {

inline constexpr size_t kAddressCacheEntries = 16384;  // one address -> a frame id
inline constexpr size_t kStackCacheEntries = 4096;     // a stack of addresses -> a stack id

template <typename Cache>
void keep_bounded(Cache& cache, size_t limit) {
  if (cache.size() >= limit) cache.clear();
}

}  // namespace gpuprof
