// SPDX-License-Identifier: MIT
#include "core/pytorch_et/et_json_values.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/base/error.h"

namespace etb::trace::detail {
namespace {
namespace dom = simdjson::dom;
using simdjson::dom::element_type;

// Walks an optional parallel array (shapes, strides) beside the values.
class Parallel {
 public:
  explicit Parallel(const dom::element* e) {
    if (e != nullptr && e->is_array()) {
      arr_ = e->get_array().value_unsafe();
      it_ = arr_.begin();
      end_ = arr_.end();
      valid_ = true;
    }
  }
  // The current entry (null past the end), then advances.
  const dom::element* next() {
    if (!valid_ || it_ == end_) return nullptr;
    cur_ = *it_;
    ++it_;
    return &cur_;
  }

 private:
  dom::array arr_;
  dom::array::iterator it_, end_;
  dom::element cur_;
  bool valid_ = false;
};

bool isNumber(const dom::element& e) {
  const auto k = e.type();
  return k == element_type::INT64 || k == element_type::UINT64;
}

uint64_t asU64(const dom::element& e) {
  return e.type() == element_type::UINT64 ? e.get_uint64().value_unsafe()
                                          : static_cast<uint64_t>(e.get_int64().value_unsafe());
}

// "GenericList[Tensor(float),Int]" -> {"Tensor(float)", "Int"}.
std::vector<std::string_view> splitElementTypes(std::string_view type) {
  std::vector<std::string_view> out;
  const size_t open = type.find('[');
  if (open == std::string_view::npos || type.back() != ']') return out;
  const std::string_view inner = type.substr(open + 1, type.size() - open - 2);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    const char c = i < inner.size() ? inner[i] : ',';
    if (c == '[' || c == '(' || c == '<') ++depth;
    if (c == ']' || c == ')' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      if (i > start) out.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}
}  // namespace

void ValueDecoder::fail(const std::string& what) {
  SourceLoc loc{file_};
  loc.node_id = node_;
  ETB_INPUT_ERROR(loc, "argument ", arg_, ": ", what);
}

const std::vector<StrId>& ValueDecoder::elementTypes(StrId type) {
  auto it = elem_types_.find(type);
  if (it != elem_types_.end()) return it->second;
  std::vector<StrId> ids;
  for (std::string_view s : splitElementTypes(sink_.view(type))) ids.push_back(sink_.str(s));
  return elem_types_.emplace(type, std::move(ids)).first->second;
}

ListId ValueDecoder::internInts(const Elem* e, bool* ok) {
  *ok = false;
  if (e == nullptr || !e->is_array()) return 0;
  scratch_.clear();
  const dom::array arr = e->get_array().value_unsafe();
  for (dom::element x : arr) {
    if (!isNumber(x)) return 0;
    scratch_.push_back(static_cast<int64_t>(asU64(x)));
  }
  *ok = true;
  return sink_.list(scratch_);
}

void ValueDecoder::decodeArgs(NodeId node, dom::element values, const Elem* shapes,
                              const Elem* types, const Elem* strides,
                              std::vector<Value>* out) {
  if (!ids_ready_) {
    double_ = sink_.str("Double");
    device_ = sink_.str("Device");
    string_ = sink_.str("String");
    ids_ready_ = true;
  }
  node_ = node;
  arg_ = 0;
  if (!values.is_array()) fail("\"values\" is not an array");
  dom::array arr = values.get_array().value_unsafe();
  out->reserve(arr.size());
  Parallel shape_it(shapes), type_it(types), stride_it(strides);
  for (dom::element v : arr) {
    const Elem* shape = shape_it.next();
    const Elem* type = type_it.next();
    const Elem* stride = stride_it.next();
    StrId type_id = 0;
    if (type != nullptr && type->is_string()) {
      type_id = sink_.str(type->get_string().value_unsafe());
    }
    // Triton nodes record fewer strides than values: a missing entry reads
    // as "not recorded".
    out->push_back(decode(v, shape, stride, type_id));
    ++arg_;
  }
}

Value ValueDecoder::decode(Elem v, const Elem* shape, const Elem* stride, StrId type) {
  Value out;
  switch (v.type()) {
    case element_type::ARRAY:
      return decodeArray(v.get_array().value_unsafe(), shape, stride, type);
    case element_type::STRING:
      return decodeString(v.get_string().value_unsafe(), type);
    case element_type::INT64:
    case element_type::UINT64:
      if (type == double_) {
        out.kind = ValueKind::kDouble;
        out.d = v.type() == element_type::INT64 ? static_cast<double>(v.get_int64().value_unsafe())
                                                : static_cast<double>(v.get_uint64().value_unsafe());
      } else {
        out.kind = ValueKind::kInt;
        out.i = static_cast<int64_t>(asU64(v));
      }
      break;
    case element_type::DOUBLE:
      out.kind = ValueKind::kDouble;
      out.d = v.get_double().value_unsafe();
      break;
    case element_type::BOOL:
      out.kind = ValueKind::kBool;
      out.b = v.get_bool().value_unsafe();
      break;
    case element_type::NULL_VALUE:
      out.kind = ValueKind::kNone;
      break;
    case element_type::OBJECT:
      fail("a JSON object is not a recorded value");
  }
  out.type = type;
  return out;
}

Value ValueDecoder::decodeArray(dom::array a, const Elem* shape, const Elem* stride,
                                StrId type) {
  const std::string_view ts = sink_.view(type);
  if (ts.rfind("Tensor", 0) == 0) return decodeTensor(a, shape, stride, type);
  Value out;
  out.kind = ts.rfind("Tuple[", 0) == 0 ? ValueKind::kTuple : ValueKind::kList;
  out.type = type;
  const std::vector<StrId>& elems = elementTypes(type);
  out.items.reserve(a.size());
  Parallel shape_it(shape), stride_it(stride);
  size_t i = 0;
  for (dom::element x : a) {
    const StrId et = i < elems.size() ? elems[i] : 0;
    const Elem* sh = shape_it.next();
    const Elem* st = stride_it.next();
    out.items.push_back(decode(x, sh, st, et));
    ++i;
  }
  return out;
}

Value ValueDecoder::decodeTensor(dom::array a, const Elem* shape, const Elem* stride,
                                 StrId type) {
  uint64_t f[5] = {0, 0, 0, 0, 0};
  std::string_view device;
  size_t n = 0;
  for (dom::element x : a) {
    if (n < 5 && isNumber(x)) {
      f[n] = asU64(x);
    } else if (n == 5 && x.is_string()) {
      device = x.get_string().value_unsafe();
    } else {
      fail("tensor value must be [tensor_id, storage_id, offset, numel, itemsize, device]");
    }
    ++n;
  }
  if (n != 5 && n != 6) fail("tensor value has " + std::to_string(n) + " elements, expected 5 or 6");
  TensorRef r;
  r.tensor_id = f[0];
  r.storage_id = f[1];
  r.offset = f[2];
  r.numel = f[3];
  r.itemsize = static_cast<uint32_t>(f[4]);
  r.dtype = dtypeOfTensorType(sink_.view(type));
  r.has_device = n == 6;
  if (r.has_device) r.device = sink_.str(device);
  bool ok = false;
  r.shape = internInts(shape, &ok);
  if (stride != nullptr) {
    bool sok = false;
    r.strides = internInts(stride, &sok);
    // "[]" stands for "not recorded" unless the tensor is 0-d.
    r.has_strides = sok && (r.strides != 0 || r.shape == 0);
    if (!r.has_strides) r.strides = 0;
  }
  Value out;
  out.kind = ValueKind::kTensor;
  out.type = type;
  out.tensor = sink_.tensor(r);
  return out;
}

Value ValueDecoder::decodeString(std::string_view s, StrId type) {
  Value out;
  out.type = type;
  if (type == double_) {
    out.kind = ValueKind::kDouble;
    if (s == "inf") {
      out.d = std::numeric_limits<double>::infinity();
    } else if (s == "-inf") {
      out.d = -std::numeric_limits<double>::infinity();
    } else if (s == "nan" || s == "-nan") {
      out.d = std::numeric_limits<double>::quiet_NaN();
    } else {
      std::string copy(s);
      char* end = nullptr;
      out.d = std::strtod(copy.c_str(), &end);
      if (end == copy.c_str() || *end != '\0') {
        out.kind = ValueKind::kString;
        out.s = sink_.str(s);
      }
    }
    return out;
  }
  if (s == "<None>") {
    out.kind = ValueKind::kNone;
  } else if (type == device_) {
    out.kind = ValueKind::kDevice;
    out.s = sink_.str(s);
  } else if (type != string_ && s.size() >= 2 && s.front() == '<' && s.back() == '>') {
    out.kind = ValueKind::kOpaque;
    out.s = sink_.str(s);
  } else {
    out.kind = ValueKind::kString;
    out.s = sink_.str(s);
  }
  return out;
}

Value ValueDecoder::decodeAttrValue(dom::element v, StrId type) {
  Value out;
  out.type = type;
  switch (v.type()) {
    case element_type::ARRAY: {
      out.kind = ValueKind::kList;
      const dom::array arr = v.get_array().value_unsafe();
      for (dom::element x : arr) out.items.push_back(decodeAttrValue(x, 0));
      break;
    }
    case element_type::OBJECT:  // not written by any observer; kept as text
      out.kind = ValueKind::kString;
      out.s = sink_.str(simdjson::minify(v));
      break;
    case element_type::STRING:
      out.kind = ValueKind::kString;
      out.s = sink_.str(v.get_string().value_unsafe());
      break;
    case element_type::INT64:
    case element_type::UINT64:
      out.kind = ValueKind::kInt;
      out.i = static_cast<int64_t>(asU64(v));
      break;
    case element_type::DOUBLE:
      out.kind = ValueKind::kDouble;
      out.d = v.get_double().value_unsafe();
      break;
    case element_type::BOOL:
      out.kind = ValueKind::kBool;
      out.b = v.get_bool().value_unsafe();
      break;
    case element_type::NULL_VALUE:
      out.kind = ValueKind::kNone;
      break;
  }
  return out;
}

}  // namespace etb::trace::detail
