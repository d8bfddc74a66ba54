// probe_calibration.cpp: the calibration of probe_calibration.h.
#include "probe/probe_calibration.h"

#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "op_tracer_abi.h"
#include "probe/op_tracer.h"
#include "symbols/elf_image.h"

// The probed instructions, each the first of a function of its own so that
// its file offset is its symbol's: a push (emulated entry), a jne (emulated
// exit: it falls through to the `ret` whatever the flags, and the kernel
// emulates it the same way taken or not), a sub (single-stepped entry) and
// a ret (single-stepped exit). gpuprof_calibration_plain is
// gpuprof_calibration_push without a probe: the cost of the two clock reads
// around a call.
asm(R"(
    .pushsection .text
    .p2align 4
    .globl gpuprof_calibration_push
    .type gpuprof_calibration_push, @function
gpuprof_calibration_push:
    push %rbp
    pop %rbp
    ret
    .size gpuprof_calibration_push, .-gpuprof_calibration_push
    .p2align 4
    .globl gpuprof_calibration_jcc
    .type gpuprof_calibration_jcc, @function
gpuprof_calibration_jcc:
    jne 1f
1:  ret
    .size gpuprof_calibration_jcc, .-gpuprof_calibration_jcc
    .p2align 4
    .globl gpuprof_calibration_ret
    .type gpuprof_calibration_ret, @function
gpuprof_calibration_ret:
    ret
    .size gpuprof_calibration_ret, .-gpuprof_calibration_ret
    .p2align 4
    .globl gpuprof_calibration_sub
    .type gpuprof_calibration_sub, @function
gpuprof_calibration_sub:
    sub $8, %rsp
    add $8, %rsp
    ret
    .size gpuprof_calibration_sub, .-gpuprof_calibration_sub
    .p2align 4
    .globl gpuprof_calibration_plain
    .type gpuprof_calibration_plain, @function
gpuprof_calibration_plain:
    push %rbp
    pop %rbp
    ret
    .size gpuprof_calibration_plain, .-gpuprof_calibration_plain
    .popsection
)");

extern "C" void gpuprof_calibration_push();
extern "C" void gpuprof_calibration_jcc();
extern "C" void gpuprof_calibration_ret();
extern "C" void gpuprof_calibration_sub();
extern "C" void gpuprof_calibration_plain();

namespace gpuprof {
namespace {

constexpr int kCallsPerRound = 200;
constexpr int kMinRounds = 6;
constexpr int kStableRounds = 3;
constexpr double kStableSpread = 0.05;  // of the kept rounds' median total
constexpr int kMaxRounds = 1000;
// Rounds run for at least this long: the machine of docs/overhead.md has
// slow phases of 0.2 to 1.2 s in which a probe hit costs 20% more; a
// calibration as long as the shorter ones sees a normal phase as well.
constexpr uint64_t kMinRoundsNs = 400'000'000;
constexpr uint64_t kMaxRoundsNs = 2'000'000'000;  // then the last rounds, agreeing or not
constexpr int kWarmupCalls = 50;      // first hits fault in the BPF program's pages
constexpr int kConsumeTimeoutMs = 1000;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // bpf_ktime_get_ns()'s clock
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

template <typename T>
T median(std::vector<T> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The two clock reads of one call: before and after it.
struct Bracket {
  uint64_t t0 = 0, t1 = 0;
};

// The four kinds of probed instruction, in the order a round hits them.
enum Kind { kPush, kJcc, kSub, kRet, kKinds };
constexpr void (*kProbed[kKinds])() = {gpuprof_calibration_push, gpuprof_calibration_jcc, gpuprof_calibration_sub,
                                       gpuprof_calibration_ret};
constexpr const char* kSymbols[kKinds] = {"gpuprof_calibration_push", "gpuprof_calibration_jcc",
                                          "gpuprof_calibration_sub", "gpuprof_calibration_ret"};

struct RoundParts {
  ProbeCost part[kKinds];
  uint32_t total() const {
    uint32_t sum = 0;
    for (const ProbeCost& p : part) sum += p.before_ns + p.after_ns;
    return sum;
  }
};

class Calibrator {
 public:
  Result<void> start() {
    TracerConfig config;
    config.ring_buffer_bytes = 1u << 20;  // two rounds' events, many times over
    config.mem_ring_buffer_bytes = 4096;
    ASSIGN_OR_RETURN(tracer_,
                     OpTracer::load(config, {.op = [this](const gp_event& e, const EntryPayload&) { stamps_.push_back(e); },
                                             .memory = [](const gp_mem_event&) {}}));
    ASSIGN_OR_RETURN(ElfImage elf, ElfImage::open("/proc/self/exe"));
    std::optional<uint64_t> offsets[kKinds];
    elf.for_each_function([&](const ElfSymbol& sym) {
      for (int k = 0; k < kKinds; k++)
        if (sym.name == kSymbols[k]) offsets[k] = elf.file_offset(sym.address);
    });
    for (const auto& offset : offsets)
      if (!offset) return Error("gpuprof's own calibration functions are not in its symbol table (a stripped build?)");
    // The cookies of op sites: op 0 emulated, op 1 single-stepped; an
    // emulated exit computes the entry sp from rsp.
    ProbeSites sites;
    sites.add(*offsets[kPush], GP_COOKIE(GP_EV_OP_ENTRY, 0));
    sites.add(*offsets[kJcc], GP_COOKIE_FRAME_EXIT(0, 0, 8));
    sites.add(*offsets[kSub], GP_COOKIE(GP_EV_OP_ENTRY, 1));
    sites.add(*offsets[kRet], GP_COOKIE(GP_EV_OP_EXIT, 1));
    RETURN_IF_ERROR(tracer_->attach_ops("/proc/self/exe", sites, getpid()));
    tracer_->set_tracing(true);
    return {};
  }

  // The clock reads' own cost, around an unprobed call.
  uint64_t clock_cost() {
    std::vector<uint64_t> d(kCallsPerRound);
    for (uint64_t& x : d) {
      const uint64_t t0 = now_ns();
      gpuprof_calibration_plain();
      x = now_ns() - t0;
    }
    return median(d);
  }

  Result<RoundParts> round(int calls, uint64_t clock_ns) {
    std::vector<Bracket> brackets(static_cast<size_t>(calls) * kKinds);
    stamps_.clear();
    for (size_t i = 0; i < brackets.size(); i++) {
      brackets[i].t0 = now_ns();
      kProbed[i % kKinds]();
      brackets[i].t1 = now_ns();
    }
    RETURN_IF_ERROR(collect(brackets.size()));
    std::vector<int64_t> before[kKinds], after[kKinds];
    const uint32_t tid = static_cast<uint32_t>(gettid());
    for (size_t i = 0; i < stamps_.size(); i++) {
      const gp_event& e = stamps_[i];
      const size_t kind = i % kKinds;
      const bool entry = kind == kPush || kind == kSub;
      if (e.tid != tid || e.kind != (entry ? GP_EV_OP_ENTRY : GP_EV_OP_EXIT) || e.op_id != (kind >= kSub ? 1u : 0u))
        return Error("probe calibration: event " + std::to_string(i) + " is not the expected hit");
      before[kind].push_back(static_cast<int64_t>(e.ts_ns) - static_cast<int64_t>(brackets[i].t0));
      after[kind].push_back(static_cast<int64_t>(brackets[i].t1) - static_cast<int64_t>(e.ts_ns));
    }
    auto part = [&](const std::vector<int64_t>& v) {
      const int64_t ns = median(v) - static_cast<int64_t>(clock_ns / 2);
      return static_cast<uint32_t>(std::max<int64_t>(ns, 0));
    };
    RoundParts parts;
    for (int k = 0; k < kKinds; k++) parts.part[k] = {part(before[k]), part(after[k])};
    return parts;
  }

 private:
  Result<void> collect(size_t expected) {
    const uint64_t deadline = now_ns() + kConsumeTimeoutMs * 1000000ull;
    while (stamps_.size() < expected) {
      if (tracer_->consume() < 0 || now_ns() > deadline) break;
      if (stamps_.size() < expected) {
        pollfd p{.fd = tracer_->poll_fd(), .events = POLLIN, .revents = 0};
        poll(&p, 1, 10);
      }
    }
    if (stamps_.size() != expected || tracer_->events_lost() != 0)
      return Error("probe calibration: " + std::to_string(stamps_.size()) + " of " + std::to_string(expected) +
                   " probe hits came back");
    return {};
  }

  std::unique_ptr<OpTracer> tracer_;
  std::vector<gp_event> stamps_;
};

// Each part of each kind, a statistic of the chosen rounds' medians.
ProbeCosts costs_of(const std::vector<RoundParts>& rounds, uint32_t (*statistic)(std::vector<uint32_t>)) {
  auto of = [&](Kind k) {
    std::vector<uint32_t> before, after;
    for (const RoundParts& r : rounds) {
      before.push_back(r.part[k].before_ns);
      after.push_back(r.part[k].after_ns);
    }
    return ProbeCost{statistic(before), statistic(after)};
  };
  ProbeCosts costs;
  costs.entry = of(kPush);
  costs.exit = of(kJcc);
  costs.entry_stepped = of(kSub);
  costs.exit_stepped = of(kRet);
  return costs;
}

uint32_t median_u32(std::vector<uint32_t> v) { return median(std::move(v)); }

// The mean of the middle 80%: the time-average a job pays through the
// machine's phases, without the odd round an interrupt stretched.
uint32_t trimmed_mean(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  const size_t cut = v.size() / 10;
  uint64_t sum = 0;
  for (size_t i = cut; i < v.size() - cut; i++) sum += v[i];
  return static_cast<uint32_t>(sum / (v.size() - 2 * cut));
}

}  // namespace

struct ProbeCalibrator::Impl {
  Calibrator calibrator;
  uint64_t clock_ns = 0;
  std::vector<RoundParts> rounds;
  uint64_t started_ns = 0;
};

ProbeCalibrator::ProbeCalibrator() : impl_(std::make_unique<Impl>()) {}
ProbeCalibrator::~ProbeCalibrator() = default;

Result<std::unique_ptr<ProbeCalibrator>> ProbeCalibrator::start() {
  std::unique_ptr<ProbeCalibrator> c(new ProbeCalibrator());
  c->impl_->started_ns = now_ns();
  RETURN_IF_ERROR(c->impl_->calibrator.start());
  RETURN_IF_ERROR(c->impl_->calibrator.round(kWarmupCalls, 0));  // its parts are not kept
  c->impl_->clock_ns = c->impl_->calibrator.clock_cost();
  return c;
}

Result<void> ProbeCalibrator::round() {
  ASSIGN_OR_RETURN(RoundParts parts, impl_->calibrator.round(kCallsPerRound, impl_->clock_ns));
  impl_->rounds.push_back(parts);
  return {};
}

// Rounds until some kStableRounds consecutive ones agree, at least
// kMinRounds and kMinRoundsNs; of the windows that agree, the one of the
// lowest median total is kept: a slow phase of the machine (another
// session's teardown, the host's own load) inflates rounds, nothing
// deflates them.
Result<ProbeCosts> ProbeCalibrator::calibrate() {
  const uint64_t rounds_started = now_ns();
  auto window_spread = [&](size_t first, uint32_t* median_total) {
    std::vector<uint32_t> totals;
    for (size_t i = first; i < first + kStableRounds; i++) totals.push_back(impl_->rounds[i].total());
    const auto [lo, hi] = std::minmax_element(totals.begin(), totals.end());
    *median_total = median(totals);
    return static_cast<double>(*hi - *lo) / std::max<uint32_t>(*median_total, 1);
  };
  std::optional<size_t> best;  // the first round of the window kept
  uint32_t best_total = 0;
  double spread = 0;
  size_t run = 0;
  while (static_cast<int>(run) < kMaxRounds && now_ns() - rounds_started < kMaxRoundsNs) {
    RETURN_IF_ERROR(round());
    run++;
    if (static_cast<int>(run) < kStableRounds) continue;
    uint32_t total = 0;
    const size_t first = impl_->rounds.size() - kStableRounds;
    const double s = window_spread(first, &total);
    if (s <= kStableSpread && (!best || total < best_total)) {
      best = first;
      best_total = total;
      spread = s;
    }
    if (best && static_cast<int>(run) >= kMinRounds && now_ns() - rounds_started >= kMinRoundsNs) break;
  }
  if (!best) {  // none agreed: the last rounds, their spread recorded
    best = impl_->rounds.size() - kStableRounds;
    spread = window_spread(*best, &best_total);
  }
  const std::vector<RoundParts> kept(impl_->rounds.begin() + static_cast<std::ptrdiff_t>(*best),
                                     impl_->rounds.begin() + static_cast<std::ptrdiff_t>(*best + kStableRounds));
  ProbeCosts costs = costs_of(kept, median_u32);
  costs.calls = kStableRounds * kCallsPerRound;
  costs.rounds = static_cast<uint32_t>(run);
  costs.spread_permille = static_cast<uint32_t>(spread * 1000 + 0.5);
  costs.took_ns = now_ns() - impl_->started_ns;
  return costs;
}

std::optional<ProbeCosts> ProbeCalibrator::through_rounds() const {
  const std::vector<RoundParts>& rounds = impl_->rounds;
  if (rounds.size() < static_cast<size_t>(kMinRounds)) return std::nullopt;
  ProbeCosts costs = costs_of(rounds, trimmed_mean);
  std::vector<uint32_t> totals;
  for (const RoundParts& r : rounds) totals.push_back(r.total());
  std::sort(totals.begin(), totals.end());
  const uint32_t p10 = totals[totals.size() / 10], p90 = totals[totals.size() - 1 - totals.size() / 10];
  costs.calls = static_cast<uint32_t>(rounds.size()) * kCallsPerRound;
  costs.rounds = static_cast<uint32_t>(rounds.size());
  costs.spread_permille =
      static_cast<uint32_t>(1000.0 * (p90 - p10) / std::max<uint32_t>(median(totals), 1) + 0.5);
  costs.took_ns = now_ns() - impl_->started_ns;
  return costs;
}

Result<ProbeCosts> calibrate_probe_costs() {
  ASSIGN_OR_RETURN(std::unique_ptr<ProbeCalibrator> calibrator, ProbeCalibrator::start());
  return calibrator->calibrate();
}

}  // namespace gpuprof
