// SPDX-License-Identifier: MIT
#include "replayer/replay_flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/base/error.h"
#include "core/base/log.h"

namespace etb::replay {
namespace {

using Setter = std::function<void(RunFlags&, const std::string&)>;
using Shown = std::function<std::string(const RunFlags&)>;

long long toInt(const char* flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    ETB_INPUT_ERROR(SourceLoc{flag}, "expected an integer, got \"", text, "\"");
  }
  return v;
}

double toDouble(const char* flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) {
    ETB_INPUT_ERROR(SourceLoc{flag}, "expected a number, got \"", text, "\"");
  }
  return v;
}

std::string numberText(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Setters and default texts for the common shapes of flag.
Setter intOption(const char* flag, int ReplayOptions::*field) {
  return [flag, field](RunFlags& f, const std::string& v) {
    const long long x = toInt(flag, v);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      ETB_INPUT_ERROR(SourceLoc{flag}, "out of range: ", v);
    }
    f.options.*field = static_cast<int>(x);
  };
}
Shown intShown(int ReplayOptions::*field) {
  return [field](const RunFlags& f) { return std::to_string(f.options.*field); };
}
Setter doubleOption(const char* flag, double ReplayOptions::*field) {
  return [flag, field](RunFlags& f, const std::string& v) { f.options.*field = toDouble(flag, v); };
}
Shown doubleShown(double ReplayOptions::*field) {
  return [field](const RunFlags& f) { return numberText(f.options.*field); };
}
Setter text(std::string RunFlags::*field) {
  return [field](RunFlags& f, const std::string& v) { f.*field = v; };
}
Setter optionText(std::string ReplayOptions::*field) {
  return [field](RunFlags& f, const std::string& v) { f.options.*field = v; };
}
// A two-valued choice stored as a bool: `on` sets it.
Setter choice(bool ReplayOptions::*field, const char* on) {
  return [field, on](RunFlags& f, const std::string& v) { f.options.*field = v == on; };
}
Shown choiceShown(bool ReplayOptions::*field, const char* on, const char* off) {
  return [field, on, off](const RunFlags& f) { return std::string(f.options.*field ? on : off); };
}

FlagSpec flag(const char* name, const char* type, const char* help, Setter set,
              Shown shown = nullptr) {
  FlagSpec s;
  s.name = name;
  s.type = type;
  s.help = help;
  s.set = std::move(set);
  s.shown = std::move(shown);
  return s;
}

FlagSpec onlyEtReplay(FlagSpec s) {
  s.use = FlagUse::kEtReplayOnly;
  return s;
}

FlagSpec inProgram(FlagSpec s, const char* help) {
  s.program_help = help;
  return s;
}

FlagSpec withChoices(FlagSpec s, std::vector<std::string> choices) {
  s.choices = std::move(choices);
  return s;
}

FlagSpec withRange(FlagSpec s, double lo, double hi) {
  s.ranged = true;
  s.lo = lo;
  s.hi = hi;
  return s;
}

FlagSpec repeatable(FlagSpec s, char delimiter = 0) {
  s.repeatable = true;
  s.delimiter = delimiter;
  return s;
}

std::vector<FlagSpec> runTableStart() {
  std::vector<FlagSpec> t;
  t.push_back(onlyEtReplay(flag(
      "--kineto", "TEXT",
      "profiler (Kineto) trace of the same run: original times; per rank: k_%d.json.gz",
      text(&RunFlags::kineto))));
  t.push_back(withChoices(
      flag("--comm", "TEXT",
           "collectives on mpi, gloo or nccl (default: the backend the trace's process "
           "groups recorded when built in, else mpi; nccl for --device cuda)",
           text(&RunFlags::comm)),
      {"mpi", "gloo", "nccl"}));
  t.push_back(repeatable(
      flag("--original-ms", "FLOAT",
           "measured original iteration time(s) in ms, comma-separated",
           [](RunFlags& f, const std::string& v) {
             f.original_ms.push_back(toDouble("--original-ms", v));
           }),
      ','));
  t.push_back(onlyEtReplay(flag("--original-meta", "TEXT",
                                "a fleet sample's meta.json: its unprofiled original (and its threads)",
                                text(&RunFlags::original_meta))));
  t.push_back(flag("--device", "TEXT", "cpu or cuda[:N] (default: the trace's if usable)",
                   optionText(&ReplayOptions::device)));
  t.push_back(withRange(
      flag("--device-op-iters", "INT",
           "on cuda: iterations after the measured ones with CUDA events around every op "
           "call, for each op's device time (median over them; -1 = 3; ignored on cpu)",
           intOption("--device-op-iters", &ReplayOptions::device_op_iters),
           intShown(&ReplayOptions::device_op_iters)),
      -1, 1000));
  t.push_back(flag("--threads", "INT", "intra-op threads (0 = libtorch default)",
                   intOption("--threads", &ReplayOptions::threads)));
  t.push_back(flag("--warmup", "INT", "warm-up iterations",
                   intOption("--warmup", &ReplayOptions::warmup), intShown(&ReplayOptions::warmup)));
  t.push_back(withRange(
      flag("--min-warmup-s", "FLOAT",
           "seconds: after --warmup's iterations, more until the warm-up has lasted this long "
           "(0 = --warmup's only; none with --warmup 0)",
           doubleOption("--min-warmup-s", &ReplayOptions::min_warmup_s),
           doubleShown(&ReplayOptions::min_warmup_s)),
      0, 3600));
  t.push_back(flag("--speed-probe", "",
                   "probe the host's speed (four 64x64 mm's, as et_profile_hw's guard) around "
                   "each measured iteration: the report's replay.speed_probe_us",
                   [](RunFlags& f, const std::string&) { f.options.speed_probe = true; }));
  t.push_back(flag("--iters", "INT", "measured iterations",
                   intOption("--iters", &ReplayOptions::iters), intShown(&ReplayOptions::iters)));
  t.push_back(withRange(
      flag("--min-iters-s", "FLOAT",
           "seconds: more measured iterations than --iters until they last about this long "
           "(counted from --iters' own time per iteration; at most 10,000 more; 0 = --iters only)",
           doubleOption("--min-iters-s", &ReplayOptions::min_iters_s),
           doubleShown(&ReplayOptions::min_iters_s)),
      0, 3600));
  t.push_back(onlyEtReplay(flag("--iteration", "INT", "recorded iteration (ProfilerStep) to replay",
                                intOption("--iteration", &ReplayOptions::iteration),
                                intShown(&ReplayOptions::iteration))));
  t.push_back(flag("--index-dist", "TEXT", "index tensors: uniform or zipf:ALPHA",
                   [](RunFlags& f, const std::string& v) {
                     parseIndexDist(v);  // its InputError names --index-dist
                     f.options.index_dist = v;
                   },
                   [](const RunFlags& f) { return f.options.index_dist; }));
  t.push_back(flag("--seed", "UINT", "seed for tensor data",
                   [](RunFlags& f, const std::string& v) {
                     const long long x = toInt("--seed", v);
                     if (x < 0) ETB_INPUT_ERROR(SourceLoc{"--seed"}, "must be >= 0, got ", v);
                     f.options.seed = static_cast<uint64_t>(x);
                   },
                   [](const RunFlags& f) { return std::to_string(f.options.seed); }));
  return t;
}

void addFidelityFlags(std::vector<FlagSpec>& t) {
  t.push_back(inProgram(
      withChoices(flag("--host-time", "TEXT",
                       "off: time the ops alone; emulate: also time iterations with the original's "
                       "host time between ops (from --kineto, less the profiler's cost measured here)",
                       choice(&ReplayOptions::emulate_host, "emulate"),
                       choiceShown(&ReplayOptions::emulate_host, "emulate", "off")),
                  {"off", "emulate"}),
      "off: time the ops alone; emulate: also time iterations with the original's host time "
      "between ops (from the profiler times the program was generated with, et_generate "
      "--kineto, less the profiler's cost measured here)"));
  t.push_back(withRange(
      flag("--host-stall-us", "FLOAT",
           "with --host-time emulate: an eventless stretch of a profiled gap longer than "
           "this counts as this long (the recording was preempted); 0 = no limit",
           doubleOption("--host-stall-us", &ReplayOptions::host_stall_us),
           doubleShown(&ReplayOptions::host_stall_us)),
      0, std::numeric_limits<double>::infinity()));
  t.push_back(withChoices(
      flag("--heap", "TEXT",
           "glibc: the heap as this process's malloc sets it; match: blocks of 64 KiB and "
           "up from the replay's own mappings, a share of whose pages is handed back before "
           "each reuse, so that page faults per iteration come near the original's (metrics "
           "sidecar); the share is set in extra iterations before the measured ones",
           choice(&ReplayOptions::match_heap, "match"),
           choiceShown(&ReplayOptions::match_heap, "match", "glibc")),
      {"glibc", "match"}));
  t.push_back(withChoices(
      flag("--autograd", "TEXT",
           "off: every op on plain tensors; record: the forward's ops build autograd's graph "
           "over parameters that require grad, as the original's did (the backward's and "
           "the optimizer's ops run under no_grad)",
           choice(&ReplayOptions::record_autograd, "record"),
           choiceShown(&ReplayOptions::record_autograd, "record", "off")),
      {"off", "record"}));
  t.push_back(withChoices(
      flag("--state", "TEXT",
           "reset: every iteration starts from the values the first one started from (the "
           "parameters, optimizer state and running statistics that ops update in place), as "
           "the recorded iteration ran once; carry: each continues from the last one's "
           "updates, as a training loop does (on made-up data they can run to inf and NaN, "
           "where kernels such as max_pool2d take another time)",
           choice(&ReplayOptions::carry_state, "carry"),
           choiceShown(&ReplayOptions::carry_state, "carry", "reset")),
      {"reset", "carry"}));
  t.push_back(withChoices(
      flag("--denormals", "TEXT",
           "flush: denormal floats are computed as zero on the CPU (the replay's drawn "
           "values can shrink into them where the original's did not, and the CPU's slow "
           "path for them runs 10-100x slower); keep: as the CPU computes them",
           choice(&ReplayOptions::keep_denormals, "keep"),
           choiceShown(&ReplayOptions::keep_denormals, "keep", "flush")),
      {"flush", "keep"}));
  t.push_back(inProgram(
      flag("--original-metrics", "TEXT",
           "the original's system metrics (recorder sidecar; default: <stem>.metrics.json "
           "beside the trace)",
           text(&RunFlags::original_metrics)),
      "the original's system metrics (recorder sidecar, per rank: %d; default: the one "
      "et_generate embedded, if any)"));
}

void addOutputFlags(std::vector<FlagSpec>& t) {
  t.push_back(repeatable(flag(
      "--load-library", "TEXT",
      "operator library to load first, as torch.ops.load_library (torchvision's _C.so "
      "for torchvision:: ops); repeatable",
      [](RunFlags& f, const std::string& v) { f.libraries.push_back(v); })));
  t.push_back(flag("--verify", "", "exit 1 when a replayed output's shape, dtype or strides differ from the trace's (they are checked in the first iteration and logged either way)",
                   [](RunFlags& f, const std::string&) { f.options.verify_outputs = true; }));
  t.push_back(flag("--report-json", "TEXT", "write the report as JSON", text(&RunFlags::report_json)));
  t.push_back(flag("--report-html", "TEXT", "write a self-contained HTML report",
                   text(&RunFlags::report_html)));
  t.push_back(flag("--chrome-trace", "TEXT", "write the replay timeline (Perfetto)",
                   text(&RunFlags::chrome_trace)));
  t.push_back(flag("--comm-timeout", "FLOAT", "seconds any one collective may take (0 = none)",
                   [](RunFlags& f, const std::string& v) {
                     f.comm_timeout = toDouble("--comm-timeout", v);
                   }));
  t.push_back(onlyEtReplay(flag("--write-timed-trace", "TEXT",
                                "write the trace back with each op's median replay time (.et for a "
                                "simulator; %d = rank)",
                                text(&RunFlags::timed_trace))));
  t.push_back(flag("--log-level", "TEXT", "debug, info, warn, error", text(&RunFlags::log_level)));
  t.push_back(flag("--quiet", "", "no terminal report",
                   [](RunFlags& f, const std::string&) { f.quiet = true; }));
}
}  // namespace

const std::vector<FlagSpec>& replayFlags() {
  static const std::vector<FlagSpec> table = [] {
    std::vector<FlagSpec> t = runTableStart();
    addFidelityFlags(t);
    addOutputFlags(t);
    return t;
  }();
  return table;
}

const FlagSpec* findReplayFlag(const std::string& name, bool generated_program) {
  for (const FlagSpec& s : replayFlags()) {
    if (name != s.name) continue;
    if (generated_program && s.use == FlagUse::kEtReplayOnly) return nullptr;
    return &s;
  }
  return nullptr;
}

void applyFlag(const FlagSpec& spec, RunFlags& flags, const std::string& value) {
  std::vector<std::string> parts;
  if (spec.delimiter != 0) {
    std::istringstream in(value);
    for (std::string part; std::getline(in, part, spec.delimiter);) parts.push_back(part);
  } else {
    parts.push_back(value);
  }
  for (const std::string& v : parts) {
    if (!spec.choices.empty() &&
        std::find(spec.choices.begin(), spec.choices.end(), v) == spec.choices.end()) {
      std::string all;
      for (const std::string& c : spec.choices) all += (all.empty() ? "" : ", ") + c;
      ETB_INPUT_ERROR(SourceLoc{spec.name}, "\"", v, "\" is not one of ", all);
    }
    if (spec.ranged) {
      const double x = toDouble(spec.name, v);
      if (x < spec.lo || x > spec.hi) {
        ETB_INPUT_ERROR(SourceLoc{spec.name}, v, " is outside [", numberText(spec.lo), ", ",
                        numberText(spec.hi), "]");
      }
    }
    spec.set(flags, v);
  }
}

void applyLogLevel(const RunFlags& flags) {
  if (flags.log_level.empty()) return;
  LogLevel level;
  if (!parseLogLevel(flags.log_level.c_str(), &level)) {
    ETB_INPUT_ERROR(SourceLoc{"--log-level"}, "unknown level \"", flags.log_level, "\"");
  }
  setLogLevel(level);
}

std::string programFlagsHelp() {
  const RunFlags defaults;
  std::ostringstream os;
  for (const FlagSpec& s : replayFlags()) {
    if (s.use != FlagUse::kBoth) continue;
    std::string head = std::string("  ") + s.name;
    if (!s.choices.empty()) {
      std::string all;
      for (const std::string& c : s.choices) all += (all.empty() ? "" : "|") + c;
      head += " " + all;
    } else if (*s.type != '\0') {
      head += std::string(" ") + s.type;
    }
    os << head << "\n      " << (s.program_help != nullptr ? s.program_help : s.help);
    if (s.shown) os << " [" << s.shown(defaults) << "]";
    os << "\n";
  }
  return os.str();
}

}  // namespace etb::replay
