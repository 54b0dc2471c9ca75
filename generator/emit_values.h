// SPDX-License-Identifier: MIT
//
// C++ source for the pieces of one node: values, tensors, comm info, enums.
// Tensors get generated names (t<recorded id>[_k]) declared before the
// statement that first uses them in a function.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/trace.h"
#include "replayer/leaf_layout.h"

namespace etb::gen {

std::string enumName(trace::DType v);
std::string enumName(trace::CommType v);
std::string enumName(trace::ReduceOp v);
std::string enumName(trace::NodeKind v);

// Names and declarations of the tensors one generated function uses.
class TensorNames {
 public:
  // `layouts`: strides for unstrided leaf views (the generated trace lacks
  // the view ops et_replay derives them from), or null. `generations`: the
  // buffer each tensor lives in where the recording reused a storage id,
  // written as its storage id (the generated trace lacks the child ops that
  // show the reuse), or null.
  TensorNames(const trace::Trace& t, const replay::ViewLayouts* layouts,
              const replay::StorageGenerations* generations = nullptr)
      : t_(t), layouts_(layouts), generations_(generations) {}
  // The identifier for `ref`; appends its declaration to `decls` when new.
  std::string use(const trace::TensorRef& ref, std::string& decls);

 private:
  using Key = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint32_t, int, uint32_t,
                         uint32_t, uint32_t, bool, bool>;
  const trace::Trace& t_;
  const replay::ViewLayouts* layouts_;
  const replay::StorageGenerations* generations_;
  std::map<Key, std::string> names_;
  std::map<uint64_t, int> per_id_;
};

// `b.i(3, ETB_S("Int"))`, `b.list({...}, ...)`, `b.t(t12, ...)`; tensor
// declarations it needs go to `decls`.
std::string valueExpr(const trace::Trace& t, const trace::Value& v, TensorNames& names,
                      std::string& decls);

// Statements filling a CommInfo named `c` (only fields that differ from
// the defaults).
std::string commInfoStatements(const trace::Trace& t, const trace::CommInfo& c,
                               const std::string& indent);

}  // namespace etb::gen
