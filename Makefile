# gpuprof build: BPF objects -> skeletons -> userspace -> build/gpuprof.
# `make` builds the tool, `make test` builds and runs the unit tests,
# `make check` runs unit and integration tests (root + BPF needed).
# V=1 prints every command.

BUILD      := build
CLANG      ?= clang
BPFTOOL    ?= bpftool
CXX        ?= g++
ARCH       := x86

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

# userspace/ holds one folder per stage of the pipeline (docs/architecture.md),
# each a static library; dependencies point down this list, which is also
# the link order (scripts/check_layout.py checks the includes).
STAGES     := cli live output analyze collect target probe python torch symbols record base
STAGE_LIBS := $(foreach s,$(STAGES),$(BUILD)/lib/libgpuprof_$(s).a)
APP_SRCS   := $(foreach s,$(STAGES),$(wildcard userspace/$(s)/*.cpp))
APP_OBJS   := $(patsubst %.cpp,$(BUILD)/obj/%.o,$(APP_SRCS))
MAIN_OBJ   := $(BUILD)/obj/userspace/main.o
stage_objs  = $(patsubst %.cpp,$(BUILD)/obj/%.o,$(wildcard userspace/$(1)/*.cpp))
# Only the probe stage loads BPF skeletons: only its objects wait for them.
PROBE_OBJS := $(filter $(BUILD)/obj/userspace/probe/%,$(APP_OBJS))
TEST_SRCS  := $(wildcard tests/unit/*.cpp)
TEST_OBJS  := $(patsubst %.cpp,$(BUILD)/obj/%.o,$(TEST_SRCS))

CXXFLAGS   ?= -O2 -g
# -Wno-missing-field-initializers: a designated initializer names the fields
# it sets and leaves the rest at their defaults, by design; GCC 12 warns
# about every field it leaves out.
CXXFLAGS   += -std=c++20 -Wall -Wextra -Wno-missing-field-initializers -Werror=return-type -MMD -MP \
              -Iuserspace -Ibpf -I$(BUILD)
# Debian ships static archives of these; link them in so build/gpuprof can be
# copied to a machine that lacks them (the GPU machines have no apt).
STATIC_LIBS := -Wl,-Bstatic -lbpf -lelf -lcapstone -lz -lzstd -Wl,-Bdynamic
LDFLAGS    += -static-libstdc++ -static-libgcc
LDLIBS     += $(STATIC_LIBS) -lpthread

# The multiarch include dir: libbpf's usdt.bpf.h includes <linux/errno.h>,
# whose <asm/errno.h> lives there on Debian.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -D__BPF__ -Ibpf -I$(BUILD) \
              -I/usr/include/$(shell $(CC) -dumpmachine)

.PHONY: all test check integration bench clean fuzz layout
# The stage libraries' prerequisites are their folders' objects.
.SECONDEXPANSION:
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS) $(SKELS) $(APP_OBJS)

FAKE_LIBTORCH := $(BUILD)/tests/fake_libtorch/libtorch_cpu.so $(BUILD)/tests/fake_libtorch/driver \
                 $(BUILD)/tests/fake_libtorch/memory_driver $(BUILD)/tests/fake_libtorch/launch_driver \
                 $(BUILD)/tests/fake_libtorch/planted_driver
# Debian's real libc10 (python3-torch), which the fake CUDA memory ops call.
LIBC10 := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libc10.so.*))
CUDA_HOME ?= /usr/local/cuda

# The CUPTI injection shim (cupti_shim/), next to gpuprof: record -- CMD
# points CUDA_INJECTION64_PATH at it. Its stand-in libcupti and their test
# driver (tests/fake_cupti/), in variants lacking an optional function.
SHIM := $(BUILD)/libgpuprof_cupti.so
FAKE_CUPTI := $(BUILD)/tests/fake_cupti/libcupti.so.13 $(BUILD)/tests/fake_cupti/cupti_driver \
              $(BUILD)/tests/fake_cupti/libjob_profiler.so \
              $(BUILD)/tests/fake_cupti/noflush/libcupti.so.13 $(BUILD)/tests/fake_cupti/nots/libcupti.so.13

# Small programs the integration tests drive (tests/tools/), each linked
# with the stage libraries it calls.
TEST_TOOLS := $(BUILD)/tests/tools/module_names

all: $(BUILD)/gpuprof $(SHIM) $(FAKE_LIBTORCH) $(FAKE_CUPTI) $(TEST_TOOLS)

$(BUILD):
	$(Q)mkdir -p $@

# vmlinux.h comes from the running kernel's BTF (every kernel this tool
# supports has /sys/kernel/btf/vmlinux); it is never checked in.
$(BUILD)/vmlinux.h: | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/obj/%.o: %.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

$(PROBE_OBJS): $(SKELS)

$(BUILD)/lib/libgpuprof_%.a: $$(call stage_objs,$$*)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

# --version names the commit and the build date: build/build_info.h is
# rewritten only when they change, so that main.o rebuilds just then.
$(BUILD)/build_info.h: FORCE
	$(Q)mkdir -p $(dir $@)
	$(Q)printf '#define GPUPROF_COMMIT "%s"\n#define GPUPROF_BUILD_DATE "%s"\n' \
	  "$$(git describe --always --dirty 2>/dev/null || echo unknown)" "$$(date -u +%Y-%m-%d)" > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(MAIN_OBJ): $(BUILD)/build_info.h

.PHONY: FORCE
FORCE:

$(BUILD)/gpuprof: $(MAIN_OBJ) $(STAGE_LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Unit tests of the stages below the test objects' own includes; the
# stage libraries in link order (their dependencies point down).
$(BUILD)/gpuprof_unit_tests: $(TEST_OBJS) $(STAGE_LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ -lgmock -lgtest_main -lgtest $(LDLIBS) -o $@

# A stand-in libtorch_cpu for exception-path and CUDA-memory integration
# tests (see tests/fake_libtorch/). Named like the real one so that gpuprof
# treats it as such. No sibling calls: real ::call bodies end in `ret`
# (shared/research.md section 4), not in a tail jump.
# Its CUDA-launch ops call the real libcudart of /usr/local/cuda (no GPU
# needed: without a driver every launch fails harmlessly).
$(BUILD)/tests/fake_libtorch/libtorch_cpu.so: tests/fake_libtorch/fake_ops.cpp tests/fake_libtorch/fake_cuda_memory.cpp tests/fake_libtorch/fake_cuda_launch.cpp tests/fake_libtorch/fake_planted.cpp tests/fake_libtorch/fake_ops.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)test -n "$(LIBC10)" || { echo "libc10 (python3-torch) not found: run scripts/setup.sh" >&2; exit 1; }
	$(Q)test -e $(CUDA_HOME)/lib64/libcudart.so || { echo "$(CUDA_HOME)/lib64/libcudart.so not found (CUDA toolkit)" >&2; exit 1; }
	$(Q)$(CXX) -std=c++20 -O2 -g -fPIC -shared -fstack-protector-all -fno-optimize-sibling-calls \
		-I$(CUDA_HOME)/include $(filter %.cpp,$^) $(LIBC10) \
		-L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64 -o $@

$(BUILD)/tests/fake_libtorch/launch_driver: tests/fake_libtorch/launch_driver.cpp tests/fake_libtorch/fake_ops.h $(BUILD)/tests/fake_libtorch/libtorch_cpu.so
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g -I$(CUDA_HOME)/include $< -L$(dir $@) -l:libtorch_cpu.so \
		-L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,$(CUDA_HOME)/lib64 -o $@

$(BUILD)/tests/fake_libtorch/memory_driver: tests/fake_libtorch/memory_driver.cpp tests/fake_libtorch/fake_ops.h $(BUILD)/tests/fake_libtorch/libtorch_cpu.so
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g $< -L$(dir $@) -l:libtorch_cpu.so -Wl,-rpath,'$$ORIGIN' -o $@

$(BUILD)/tests/fake_libtorch/planted_driver: tests/fake_libtorch/planted_driver.cpp tests/fake_libtorch/fake_ops.h $(BUILD)/tests/fake_libtorch/libtorch_cpu.so
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g $< -L$(dir $@) -l:libtorch_cpu.so -Wl,-rpath,'$$ORIGIN' -o $@

$(BUILD)/tests/fake_libtorch/driver: tests/fake_libtorch/driver.cpp tests/fake_libtorch/fake_ops.h $(BUILD)/tests/fake_libtorch/libtorch_cpu.so
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g $< -L$(dir $@) -l:libtorch_cpu.so -Wl,-rpath,'$$ORIGIN' -lpthread -o $@

$(BUILD)/tests/tools/module_names: $(BUILD)/obj/tests/tools/module_names.o $(BUILD)/lib/libgpuprof_python.a \
		$(BUILD)/lib/libgpuprof_symbols.a $(BUILD)/lib/libgpuprof_base.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# -fvisibility=hidden: it exports InitializeInjection and gpuprof_cupti_state
# only; -z defs: nothing left for the target to resolve (libcupti is dlopened).
$(SHIM): cupti_shim/gpuprof_cupti.cpp cupti_shim/import_redirect.cpp cupti_shim/gpuprof_cupti_probes.h \
		cupti_shim/import_redirect.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -I$(CUDA_HOME)/include \
		$(filter %.cpp,$^) -o $@ -Wl,-z,defs

$(BUILD)/tests/fake_cupti/libcupti.so.13: tests/fake_cupti/fake_cupti.cpp tests/fake_cupti/fake_cupti_hooks.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -fPIC -shared -I$(CUDA_HOME)/include $< -o $@ \
		-Wl,-soname,libcupti.so.13

$(BUILD)/tests/fake_cupti/noflush/libcupti.so.13: tests/fake_cupti/fake_cupti.cpp tests/fake_cupti/fake_cupti_hooks.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -fPIC -shared -I$(CUDA_HOME)/include \
		-DFAKE_CUPTI_MISSING_FLUSH_PERIOD $< -o $@ -Wl,-soname,libcupti.so.13

$(BUILD)/tests/fake_cupti/nots/libcupti.so.13: tests/fake_cupti/fake_cupti.cpp tests/fake_cupti/fake_cupti_hooks.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -fPIC -shared -I$(CUDA_HOME)/include \
		-DFAKE_CUPTI_MISSING_TIMESTAMP_CALLBACK $< -o $@ -Wl,-soname,libcupti.so.13

# -z relro -z now, as torch's libraries: its GOT is read-only once loaded.
$(BUILD)/tests/fake_cupti/libjob_profiler.so: tests/fake_cupti/job_profiler_library.cpp tests/fake_cupti/job_profiler.h \
		$(BUILD)/tests/fake_cupti/libcupti.so.13
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -fPIC -shared -I$(CUDA_HOME)/include $< -o $@ \
		-L$(dir $@) -l:libcupti.so.13 -Wl,-rpath,'$$ORIGIN' -Wl,-z,relro,-z,now

$(BUILD)/tests/fake_cupti/cupti_driver: tests/fake_cupti/cupti_driver.cpp tests/fake_cupti/fake_cupti_hooks.h \
		tests/fake_cupti/job_profiler.h $(BUILD)/tests/fake_cupti/libcupti.so.13
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O2 -g -Wall -Wextra -I$(CUDA_HOME)/include $< -o $@ -L$(dir $@) -l:libcupti.so.13 \
		-Wl,-rpath,'$$ORIGIN'

# The layout check first: an include that points up the pipeline fails it.
layout:
	/usr/bin/python3 scripts/check_layout.py

test: layout $(BUILD)/gpuprof_unit_tests
	$(BUILD)/gpuprof_unit_tests --gtest_brief=0

integration: all
	/usr/bin/python3 -m pytest -v tests/integration

check: test integration

bench: all
	/usr/bin/python3 bench/overhead.py

# Fuzz targets (tests/fuzz/, docs/fuzzing.md): libFuzzer with ASan and UBSan,
# built with clang into their own object tree so the g++ build is untouched.
FUZZ_CXX     ?= clang++
FUZZ_FLAGS   := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRCS    := $(wildcard tests/fuzz/*_fuzz.cpp)
FUZZERS      := $(patsubst tests/fuzz/%.cpp,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
# Every stage but probe (its BPF skeletons' _Bool is rejected by clang++),
# collect and cli (they drive probe; no parser is there), in an archive:
# each fuzzer links only what it calls.
FUZZ_LIB_SRCS := $(filter-out $(foreach s,cli collect probe,userspace/$(s)/%),$(APP_SRCS))
FUZZ_LIB_OBJS := $(patsubst %.cpp,$(BUILD)/fuzz-obj/%.o,$(FUZZ_LIB_SRCS))

fuzz: $(FUZZERS)

$(BUILD)/fuzz-obj/%.o: %.cpp
	$(call msg,FUZZCXX,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -std=c++20 -MMD -MP -Iuserspace -Ibpf -I$(BUILD) \
		-Wno-unknown-warning-option -c $< -o $@

$(BUILD)/fuzz-obj/libgpuprof_fuzz.a: $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz/%: $(BUILD)/fuzz-obj/tests/fuzz/%.o $(BUILD)/fuzz-obj/libgpuprof_fuzz.a
	$(call msg,FUZZLD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $^ -o $@ $(STATIC_LIBS) -lpthread

clean:
	rm -rf $(BUILD)

-include $(APP_OBJS:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/obj/tests/tools/module_names.d $(wildcard $(BUILD)/fuzz-obj/*/*.d $(BUILD)/fuzz-obj/*/*/*.d $(BUILD)/fuzz-obj/*/*/*/*.d)
