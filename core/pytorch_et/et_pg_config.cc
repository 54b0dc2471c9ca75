// SPDX-License-Identifier: MIT
#include <simdjson.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/pytorch_et/et_comm_util.h"
#include "core/pytorch_et/et_json_detail.h"

namespace etb::trace::detail {
namespace {
namespace dom = simdjson::dom;

// End (exclusive) of the last complete element of a top-level JSON array,
// or 0 when none completed. Used for configs cut off by the string cap.
size_t lastCompleteElement(std::string_view s) {
  int depth = 0;
  bool in_string = false;
  size_t last = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      --depth;
      if (depth == 1) last = i + 1;
    }
  }
  return last;
}

int64_t intOr(dom::object o, const char* key, int64_t fallback) {
  int64_t v = 0;
  if (o[key].get(v) == simdjson::SUCCESS) return v;
  uint64_t u = 0;
  if (o[key].get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
  return fallback;
}

std::string stringOr(dom::object o, const char* key) {
  std::string_view s;
  if (o[key].get(s) == simdjson::SUCCESS) return std::string(s);
  int64_t v = 0;  // older traces may record pg_name as a number
  if (o[key].get(v) == simdjson::SUCCESS) return std::to_string(v);
  return "";
}

void addGroup(Trace& t, dom::object o, const NodeId node, PgByBackend* by_backend) {
  ProcessGroup g;
  g.name = stringOr(o, "pg_name");
  g.desc = stringOr(o, "pg_desc");
  g.backend = stringOr(o, "backend_config");
  dom::array ranks;
  if (o["ranks"].get(ranks) == simdjson::SUCCESS) {
    for (dom::element r : ranks) {
      int64_t v = 0;
      if (r.get(v) == simdjson::SUCCESS) g.ranks.push_back(v);
    }
  }
  g.size = intOr(o, "group_size", static_cast<int64_t>(g.ranks.size()));
  // "ranks": [] means every rank of the job.
  if (g.ranks.empty()) {
    for (int64_t r = 0; r < g.size; ++r) g.ranks.push_back(r);
  }
  (void)node;
  auto same = [&](const ProcessGroup& p) { return p.name == g.name; };
  auto it = std::find_if(t.process_groups.begin(), t.process_groups.end(), same);
  int32_t index = static_cast<int32_t>(it - t.process_groups.begin());
  if (it == t.process_groups.end()) t.process_groups.push_back(std::move(g));
  const int64_t backend_id = intOr(o, "backend_id", -1);
  if (backend_id >= 0) (*by_backend)[backend_id] = index;
}
}  // namespace

void parseProcessGroups(Trace& t, const ReadOptions& options, const Node& n,
                        PgByBackend* by_backend) {
  if (n.inputs.empty() || n.inputs[0].kind != ValueKind::kString) return;
  std::string text(t.str(n.inputs[0].s));
  dom::parser parser;
  dom::element doc;
  if (parser.parse(simdjson::padded_string(text)).get(doc) != simdjson::SUCCESS) {
    const size_t keep = lastCompleteElement(text);
    text = keep == 0 ? std::string("[]") : text.substr(0, keep) + "]";
    if (parser.parse(simdjson::padded_string(text)).get(doc) != simdjson::SUCCESS) {
      repairOrThrow(t, options, n.id, "process group config is unreadable; ignored");
      return;
    }
    repairOrThrow(t, options, n.id, "process group config was cut off; kept the complete groups");
  }
  dom::array groups;
  if (doc.get(groups) != simdjson::SUCCESS) return;
  for (dom::element g : groups) {
    dom::object o;
    if (g.get(o) == simdjson::SUCCESS) addGroup(t, o, n.id, by_backend);
  }
}

uint64_t sumNumel(const Trace& t, const Value& v) {
  if (v.kind == ValueKind::kTensor) return t.tensors[v.tensor].numel;
  uint64_t total = 0;
  for (const Value& x : v.items) total += sumNumel(t, x);
  return total;
}

DType firstDType(const Trace& t, const Value& v) {
  if (v.kind == ValueKind::kTensor) return t.tensors[v.tensor].dtype;
  for (const Value& x : v.items) {
    const DType d = firstDType(t, x);
    if (d != DType::kUnknown) return d;
  }
  return DType::kUnknown;
}

void inferRank(Trace& t, const std::vector<int64_t>& rank_votes,
               const std::vector<int64_t>& world_votes) {
  int64_t world = -1;
  for (const ProcessGroup& g : t.process_groups) world = std::max(world, g.size);
  for (int64_t w : world_votes) world = std::max(world, w);
  if (world > 0) t.world_size = world;
  if (!rank_votes.empty()) {
    t.rank = rank_votes.front();
  } else {
    // A per-rank trace of a GPU job touches exactly one cuda:N device.
    std::set<StrId> devices;
    for (const TensorRef& r : t.tensors) {
      if (r.has_device && t.str(r.device).rfind("cuda:", 0) == 0) devices.insert(r.device);
    }
    if (devices.size() == 1) {
      int64_t r = 0;
      const std::string_view digits = t.str(*devices.begin()).substr(5);
      bool ok = !digits.empty() && digits.size() < 9;
      for (char c : digits) {
        ok = ok && c >= '0' && c <= '9';
        if (ok) r = r * 10 + (c - '0');
      }
      if (ok) t.rank = r;
    }
  }
  if (t.rank < 0 && t.world_size == 1) t.rank = 0;
}

}  // namespace etb::trace::detail
