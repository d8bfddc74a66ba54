// import_redirect.h: points the calls other libraries make to one imported
// function at a replacement, from inside the process.
//
// The CUPTI shim uses it to hear the job's own profiler (torch.profiler's
// Kineto) ask CUPTI for its one subscription, and to give CUPTI up to it
// (gpuprof_cupti.cpp, "The job's profiler comes first"). Every loaded object
// that imports the function calls it through a slot of its global offset
// table (a JUMP_SLOT relocation for a call through the PLT, a GLOB_DAT one
// for a -fno-plt call or a taken address); those slots are rewritten. A
// slot in the object's RELRO range (read-only after loading: -z relro -z
// now, as torch's libraries are linked) is made writable for the one
// 8-byte store and read-only again; the store is atomic, so a thread
// calling through the slot meanwhile calls the old target or the new one.
//
// Not reached: objects loaded after the call (call it again when
// objects_loaded() has changed: slots already pointing at the replacement
// are left alone), and callers that found the function with dlsym.
#pragma once

#include <cstddef>

namespace gpuprof_shim {

// Rewrites every GOT slot bound to `symbol` in every loaded object except
// the two that contain `skip_a` and `skip_b` (the function's own library,
// whose internal calls must stay its own, and the caller's). Returns how many
// slots now point at `replacement` that did not before.
size_t redirect_imports(const char* symbol, void* replacement, const void* skip_a, const void* skip_b);

// How many objects the loader has loaded since the process started (never
// decreases): a changed count means new objects to redirect. Cheap: the
// loader's own counter, read under its lock without walking the objects.
unsigned long long objects_loaded();

}  // namespace gpuprof_shim
