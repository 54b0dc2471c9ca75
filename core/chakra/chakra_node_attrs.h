// SPDX-License-Identifier: MIT
//
// A node's attributes as the writer emits them: the recorded ones in file
// order, and the ones simulators read (chakra_consumer.h) in the kinds their
// getters accept. When the consumer form differs from the recorded attr
// (another kind, a group id instead of the recorded pg name), the consumer
// form is written under the name, listed in etb_synth, and the recorded attr
// rides along as "etb_orig:<name>" so that our reader gives it back.
#pragma once

#include <string>

#include "core/chakra/chakra_consumer.h"
#include "core/chakra/chakra_writer.h"
#include "schemas/et_def.pb.h"

namespace etb::trace::chakra {

class NodeAttrWriter {
 public:
  NodeAttrWriter(const Trace& t, const ChakraWriteOptions& options, ChakraWriteReport* report)
      : t_(t), options_(options), report_(report) {}

  // Writes n's attrs for Chakra node type `type`; appends to *synth the
  // names of attrs the reader must drop.
  void write(const Node& n, int type, ChakraProtoMsg::Node* pn, std::string* synth);

 private:
  struct Canon {
    std::string name;
    Attr attr;
  };
  std::vector<Canon> canonical(const Node& n, int type, std::vector<std::string>* suppress);
  void commAttrs(const CommInfo& c, int type, std::vector<Canon>* out,
                 std::vector<std::string>* suppress);
  void add(std::vector<Canon>* out, const char* name, Value v, const char* kind);
  void writeRecorded(const Attr& a, const Canon* canon, bool suppressed, ChakraProtoMsg::Node* pn,
                     std::string* synth);

  const Trace& t_;
  const ChakraWriteOptions& options_;
  ChakraWriteReport* report_;
  Trace scratch_;
};

}  // namespace etb::trace::chakra
