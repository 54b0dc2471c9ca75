// SPDX-License-Identifier: MIT
#include "core/pytorch_et/et_json_writer.h"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include "core/base/file_io.h"

namespace etb::trace {
namespace {

constexpr std::string_view kSchema = "1.1.1-chakra.0.0.4";

// Appends JSON text; hand-rolled because a multi-GB trace must serialise at
// memory speed, but every string goes through escape().
class Out {
 public:
  explicit Out(size_t reserve) { s_.reserve(reserve); }
  std::string take() { return std::move(s_); }

  Out& raw(std::string_view v) {
    s_.append(v);
    return *this;
  }
  Out& c(char ch) {
    s_.push_back(ch);
    return *this;
  }
  Out& i64(int64_t v) { return num(v); }
  Out& u64(uint64_t v) { return num(v); }
  Out& dbl(double v) {
    if (std::isnan(v)) return raw("\"nan\"");
    if (std::isinf(v)) return raw(v > 0 ? "\"inf\"" : "\"-inf\"");
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
    std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
    s_.append(text);
    // Keep it a JSON double so it reads back as one ("1" -> "1.0").
    if (text.find_first_of(".eE") == std::string_view::npos) s_.append(".0");
    return *this;
  }
  Out& str(std::string_view v) {
    static const char* kHex = "0123456789abcdef";
    s_.push_back('"');
    size_t run = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const auto ch = static_cast<unsigned char>(v[i]);
      if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
      s_.append(v.data() + run, i - run);
      run = i + 1;
      switch (ch) {
        case '"': s_.append("\\\""); break;
        case '\\': s_.append("\\\\"); break;
        case '\n': s_.append("\\n"); break;
        case '\t': s_.append("\\t"); break;
        case '\r': s_.append("\\r"); break;
        default:
          s_.append("\\u00");
          s_.push_back(kHex[ch >> 4]);
          s_.push_back(kHex[ch & 15]);
      }
    }
    s_.append(v.data() + run, v.size() - run);
    s_.push_back('"');
    return *this;
  }

 private:
  template <typename T>
  Out& num(T v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    s_.append(buf, static_cast<size_t>(r.ptr - buf));
    return *this;
  }
  std::string s_;
};

class Writer {
 public:
  explicit Writer(const Trace& t) : t_(t), o_(estimate(t)) {}

  std::string run() {
    o_.raw("{\"schema\": ").str(kSchema).raw(", \"pid\": ").i64(t_.pid);
    o_.raw(", \"time\": ").str(t_.time).raw(", \"start_ts\": ").u64(t_.start_ts);
    o_.raw(", \"nodes\": [");
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      if (i > 0) o_.c(',');
      o_.raw("\n");
      node(t_.nodes[i]);
    }
    o_.raw("\n], \"finish_ts\": ").u64(t_.finish_ts).raw("}\n");
    return o_.take();
  }

 private:
  static size_t estimate(const Trace& t) { return 256 + t.nodes.size() * 900; }

  void node(const Node& n) {
    o_.raw("{\"id\": ").u64(n.id).raw(", \"name\": ").str(t_.name(n));
    o_.raw(", \"ctrl_deps\": ").u64(n.parent);
    o_.raw(", \"inputs\": ");
    args(n.inputs);
    o_.raw(", \"outputs\": ");
    args(n.outputs);
    o_.raw(", \"attrs\": [");
    knownAttr("rf_id", "uint64").u64(n.rf_id).c('}');
    o_.c(',');
    knownAttr("fw_parent", "uint64").u64(n.fw_parent).c('}');
    o_.c(',');
    knownAttr("seq_id", "int64").i64(n.seq_id).c('}');
    o_.c(',');
    knownAttr("scope", "uint64").u64(n.scope).c('}');
    o_.c(',');
    knownAttr("tid", "uint64").u64(n.tid).c('}');
    o_.c(',');
    knownAttr("fw_tid", "uint64").u64(n.fw_tid).c('}');
    o_.c(',');
    knownAttr("op_schema", "string").str(t_.str(n.op_schema)).c('}');
    for (const Attr& a : n.attrs) {
      o_.raw(", {\"name\": ").str(t_.str(a.name)).raw(", \"type\": ").str(t_.str(a.type));
      o_.raw(", \"value\": ");
      attrValue(a.value, t_.str(a.type) == "uint64");
      o_.c('}');
    }
    o_.c(']');
    if (n.start_us >= 0) o_.raw(", \"ts\": ").dbl(n.start_us);
    if (n.dur_us >= 0) o_.raw(", \"inclusive_dur\": ").dbl(n.dur_us);
    o_.c('}');
  }

  Out& knownAttr(std::string_view name, std::string_view type) {
    return o_.raw(" {\"name\": ").str(name).raw(", \"type\": ").str(type).raw(", \"value\": ");
  }

  bool anyStrides(const Value& v) const {
    if (v.kind == ValueKind::kTensor) return t_.tensors[v.tensor].has_strides;
    for (const Value& x : v.items) {
      if (anyStrides(x)) return true;
    }
    return false;
  }

  void args(const std::vector<Value>& vs) {
    o_.raw("{\"values\": [");
    each(vs, [&](const Value& v) { value(v); });
    o_.raw("], \"shapes\": [");
    each(vs, [&](const Value& v) { shape(v); });
    o_.raw("], \"types\": [");
    each(vs, [&](const Value& v) { o_.str(t_.str(v.type)); });
    o_.c(']');
    // "strides" only where the source recorded them (1.1.1+), so that older
    // traces read back with has_strides == false.
    bool strides = false;
    for (const Value& v : vs) strides = strides || anyStrides(v);
    if (strides) {
      o_.raw(", \"strides\": [");
      each(vs, [&](const Value& v) { stride(v); });
      o_.c(']');
    }
    o_.c('}');
  }

  template <typename F>
  void each(const std::vector<Value>& vs, F f) {
    for (size_t i = 0; i < vs.size(); ++i) {
      if (i > 0) o_.raw(", ");
      f(vs[i]);
    }
  }

  void intList(const std::vector<int64_t>& l) {
    o_.c('[');
    for (size_t i = 0; i < l.size(); ++i) {
      if (i > 0) o_.raw(", ");
      o_.i64(l[i]);
    }
    o_.c(']');
  }

  void value(const Value& v) {
    switch (v.kind) {
      case ValueKind::kNone: o_.raw("\"<None>\""); break;
      case ValueKind::kInt: o_.i64(v.i); break;
      case ValueKind::kDouble: o_.dbl(v.d); break;
      case ValueKind::kBool: o_.raw(v.b ? "true" : "false"); break;
      case ValueKind::kString:
      case ValueKind::kDevice:
      case ValueKind::kOpaque: o_.str(t_.str(v.s)); break;
      case ValueKind::kTensor: tensor(t_.tensors[v.tensor]); break;
      case ValueKind::kList:
      case ValueKind::kTuple:
        o_.c('[');
        each(v.items, [&](const Value& x) { value(x); });
        o_.c(']');
        break;
    }
  }

  void tensor(const TensorRef& r) {
    o_.c('[').u64(r.tensor_id).raw(", ").u64(r.storage_id).raw(", ").u64(r.offset);
    o_.raw(", ").u64(r.numel).raw(", ").u64(r.itemsize);
    if (r.has_device) o_.raw(", ").str(t_.str(r.device));
    o_.c(']');
  }

  void shape(const Value& v) {
    if (v.kind == ValueKind::kTensor) return intList(t_.list(t_.tensors[v.tensor].shape));
    o_.c('[');
    each(v.items, [&](const Value& x) { shape(x); });
    o_.c(']');
  }

  void stride(const Value& v) {
    if (v.kind == ValueKind::kTensor) {
      const TensorRef& r = t_.tensors[v.tensor];
      return intList(r.has_strides ? t_.list(r.strides) : std::vector<int64_t>{});
    }
    o_.c('[');
    each(v.items, [&](const Value& x) { stride(x); });
    o_.c(']');
  }

  void attrValue(const Value& v, bool unsigned_int) {
    if (v.kind == ValueKind::kInt && unsigned_int) {
      o_.u64(static_cast<uint64_t>(v.i));
    } else if (v.kind == ValueKind::kNone) {
      o_.raw("null");
    } else if (v.kind == ValueKind::kDouble && std::isfinite(v.d)) {
      o_.dbl(v.d);
    } else if (v.kind == ValueKind::kList || v.kind == ValueKind::kTuple) {
      o_.c('[');
      each(v.items, [&](const Value& x) { attrValue(x, false); });
      o_.c(']');
    } else {
      value(v);
    }
  }

  const Trace& t_;
  Out o_;
};

}  // namespace

std::string writeEtJsonText(const Trace& trace) { return Writer(trace).run(); }

void writeEtJson(const Trace& trace, const std::string& path) {
  writeFileMaybeGzip(path, writeEtJsonText(trace));
}

}  // namespace etb::trace
