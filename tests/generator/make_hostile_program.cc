// SPDX-License-Identifier: MIT
//
// etb_gen_hostile OUT_DIR EXPECTED: writes a generated program for an
// in-memory trace whose names, schemas, attributes and file name hold every
// string that could break generated C++ (quotes, backslashes, newlines, */,
// trigraphs, #include, R"(, NUL and non-UTF-8 bytes, a 100 kB name). EXPECTED gets
// the strings the program must print intact, hex-encoded, one per line.
// (Built in memory: no reader accepts non-UTF-8 names.)
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/model/trace.h"
#include "generator/emit_project.h"

namespace {
using namespace etb;

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += {d[c >> 4], d[c & 15]};
  return out;
}

trace::Node opNode(trace::Trace& t, uint64_t id, const std::string& name, const std::string& schema) {
  trace::Node n;
  n.id = id;
  n.kind = trace::NodeKind::kOperator;
  n.name = t.strings.intern(name);
  n.op_schema = t.strings.intern(schema);
  return n;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: etb_gen_hostile OUT_DIR EXPECTED\n";
    return 2;
  }
  // Short names print in full in the kinds table (it clips at 39 chars).
  const std::vector<std::string> names = {
      "q\"uote\"s", "back\\slash\\", "new\nline", "end*/ /*c", "tri?\?/gr?\?=",
      "#include <x>", "raw R\"(x)\" R\"x(", "\xff\xfe\x80 bad\xc3", "hex\x01" "F0"};
  trace::Trace t;
  // The file name is printed in full in the report header.
  // (only its part after the last '/' enters the program).
  t.path = "/some/dir/evil\"\\\n*\\?\?=#include R\"(\xff" + std::string(3000, 'L') + ".json";
  t.schema = "1.0.1\"\\";
  uint64_t id = 10;
  for (const std::string& name : names) {
    // The replayer names a step after its schema when that parses; a schema
    // starting with "(" does not, so the node's own (hostile) name is shown.
    trace::Node n = opNode(t, id++, name, "(" + name + " Tensor \"x*/) -> Tensor");
    n.inputs.push_back(trace::makeString(t, name + std::string("\0nul", 4)));
    trace::Attr a;
    a.name = t.strings.intern("attr*/\\" + name);
    a.type = t.strings.intern("string");
    a.value = trace::makeString(t, name);
    n.attrs.push_back(a);
    t.nodes.push_back(std::move(n));
  }
  // One very long operator name (100 kB) and one operator that really runs.
  t.nodes.push_back(opNode(t, id++, std::string(100000, 'x') + "\"*/", "long"));
  trace::Node relu = opNode(t, id++, "aten::relu", "aten::relu(Tensor self) -> Tensor");
  trace::TensorRef r;
  r.tensor_id = 1;
  r.storage_id = 1;
  r.numel = 4;
  r.itemsize = 4;
  r.dtype = trace::DType::kFloat;
  r.has_device = true;
  r.device = t.strings.intern("cpu");
  r.shape = t.lists.intern({2, 2});
  r.strides = t.lists.intern({2, 1});
  r.has_strides = true;
  relu.inputs.push_back(trace::makeTensor(t, r, "Tensor(float)"));
  t.nodes.push_back(std::move(relu));
  t.finalize();
  gen::ProgramInfo info;
  info.name = "hostile\"*/";
  info.source = "hostile\n*/ #include";
  gen::writeProgram({t}, info, argv[1]);
  std::ofstream out(argv[2]);
  out << hex(t.path.substr(t.path.find_last_of('/') + 1)) << "\n";
  for (const std::string& name : names) out << hex(name) << "\n";
  return 0;
}
