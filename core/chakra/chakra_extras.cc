// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_extras.h"

#include <nlohmann/json.hpp>

namespace etb::trace::chakra {
namespace {
using nlohmann::json;

json parseOrNull(const std::string& text) {
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

template <typename T>
bool get(const json& j, const char* key, T* out) {
  const auto it = j.find(key);
  if (it == j.end()) return true;  // absent: keep the default
  try {
    *out = it->template get<T>();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}
}  // namespace

std::string commToJson(const Trace& t, const CommInfo& c) {
  json j = {
      {"type", static_cast<int>(c.type)}, {"raw", t.str(c.raw_name)},
      {"pg", c.pg}, {"pg_name", t.str(c.pg_name)}, {"seq", c.seq},
      {"p2p", c.is_p2p}, {"async", c.is_async}, {"coalesced", c.coalesced},
      {"dtype", static_cast<int>(c.dtype)}, {"op", static_cast<int>(c.reduce_op)},
      {"in", c.in_elems}, {"out", c.out_elems}, {"in_splits", c.in_splits},
      {"out_splits", c.out_splits}, {"root", c.root}, {"peer", c.peer},
      {"group_rank", c.group_rank}, {"bytes", c.bytes},
  };
  return j.dump();
}

bool commFromJson(Trace& t, const std::string& text, CommInfo* c) {
  const json j = parseOrNull(text);
  if (!j.is_object()) return false;
  int type = 0, dtype = 0, op = 0;
  std::string raw, pg_name;
  const bool ok = get(j, "type", &type) && get(j, "raw", &raw) && get(j, "pg", &c->pg) &&
                  get(j, "pg_name", &pg_name) && get(j, "seq", &c->seq) &&
                  get(j, "p2p", &c->is_p2p) && get(j, "async", &c->is_async) &&
                  get(j, "coalesced", &c->coalesced) && get(j, "dtype", &dtype) &&
                  get(j, "op", &op) && get(j, "in", &c->in_elems) &&
                  get(j, "out", &c->out_elems) && get(j, "in_splits", &c->in_splits) &&
                  get(j, "out_splits", &c->out_splits) && get(j, "root", &c->root) &&
                  get(j, "peer", &c->peer) && get(j, "group_rank", &c->group_rank) &&
                  get(j, "bytes", &c->bytes);
  if (!ok || type < 0 || type > static_cast<int>(CommType::kInit) || dtype < 0 ||
      dtype > static_cast<int>(DType::kComplexDouble) || op < 0 ||
      op > static_cast<int>(ReduceOp::kUnknown)) {
    return false;
  }
  c->type = static_cast<CommType>(type);
  c->dtype = static_cast<DType>(dtype);
  c->reduce_op = static_cast<ReduceOp>(op);
  c->raw_name = t.strings.intern(raw);
  c->pg_name = t.strings.intern(pg_name);
  return true;
}

std::string traceExtrasToJson(const Trace& t) {
  json pgs = json::array();
  for (const ProcessGroup& g : t.process_groups) {
    pgs.push_back({{"name", g.name}, {"desc", g.desc}, {"backend", g.backend},
                   {"ranks", g.ranks}, {"size", g.size}});
  }
  json its = json::array();
  for (const Iteration& it : t.iterations) {
    its.push_back({it.marker, it.begin, it.end, it.name, it.start_us, it.dur_us});
  }
  json ks = json::array();
  for (const KernelEvent& k : t.kernels) {
    ks.push_back({k.node, t.str(k.name), k.start_us, k.dur_us, k.device, k.stream});
  }
  json j = {{"rank", t.rank}, {"world_size", t.world_size}, {"process_groups", pgs},
            {"iterations", its}, {"kernels", ks}};
  return j.dump();
}

bool traceExtrasFromJson(const std::string& text, Trace* t) {
  const json j = parseOrNull(text);
  if (!j.is_object()) return false;
  try {
    t->rank = j.value("rank", t->rank);
    t->world_size = j.value("world_size", t->world_size);
    t->process_groups.clear();
    for (const json& g : j.value("process_groups", json::array())) {
      ProcessGroup pg;
      pg.name = g.at("name").get<std::string>();
      pg.desc = g.at("desc").get<std::string>();
      pg.backend = g.at("backend").get<std::string>();
      pg.ranks = g.at("ranks").get<std::vector<int64_t>>();
      pg.size = g.at("size").get<int64_t>();
      t->process_groups.push_back(std::move(pg));
    }
    t->iterations.clear();
    for (const json& it : j.value("iterations", json::array())) {
      t->iterations.push_back({it.at(0).get<NodeId>(), it.at(1).get<NodeId>(),
                               it.at(2).get<NodeId>(), it.at(3).get<std::string>(),
                               it.at(4).get<double>(), it.at(5).get<double>()});
    }
    t->kernels.clear();
    for (const json& k : j.value("kernels", json::array())) {
      KernelEvent e;
      e.node = k.at(0).get<NodeId>();
      e.name = t->strings.intern(k.at(1).get<std::string>());
      e.start_us = k.at(2).get<double>();
      e.dur_us = k.at(3).get<double>();
      e.device = k.at(4).get<int32_t>();
      e.stream = k.at(5).get<int64_t>();
      t->kernels.push_back(e);
    }
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

bool parsePgConfig(const std::string& text, std::vector<ProcessGroup>* out) {
  const json j = parseOrNull(text);
  if (!j.is_array()) return false;
  std::vector<ProcessGroup> pgs;
  try {
    for (const json& g : j) {
      ProcessGroup pg;
      const json& name = g.at("pg_name");
      pg.name = name.is_string() ? name.get<std::string>() : name.dump();
      if (g.contains("pg_desc") && g["pg_desc"].is_string()) pg.desc = g["pg_desc"].get<std::string>();
      if (g.contains("backend_config") && g["backend_config"].is_string()) {
        pg.backend = g["backend_config"].get<std::string>();
      }
      if (g.contains("ranks")) pg.ranks = g["ranks"].get<std::vector<int64_t>>();
      pg.size = g.value("group_size", static_cast<int64_t>(pg.ranks.size()));
      if (pg.ranks.empty()) {
        for (int64_t r = 0; r < pg.size; ++r) pg.ranks.push_back(r);
      }
      pgs.push_back(std::move(pg));
    }
  } catch (const json::exception&) {
    return false;
  }
  *out = std::move(pgs);
  return true;
}

}  // namespace etb::trace::chakra
