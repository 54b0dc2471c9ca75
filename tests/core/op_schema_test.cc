// SPDX-License-Identifier: MIT
// A recorded schema's argument names by position (core/pytorch_et/op_schema.h).
// The expected names are read off the schemas by eye; the replayer's tests
// check every schema the fleet samples recorded against libtorch's own parser.
#include "core/pytorch_et/op_schema.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace etb::trace {
namespace {

using Names = std::vector<std::string_view>;

// The keyword-only marker holds no input: alpha is the third input.
TEST(OpSchema, KeywordOnlyMarkerIsNoArgument) {
  EXPECT_EQ(schemaArgNames("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
            (Names{"self", "other", "alpha"}));
}

// Commas inside a list default, an optional list type and a tuple do not
// split an argument; nor does the ')' of an alias annotation.
TEST(OpSchema, NestedBracketsAndAnnotationsStayOneArgument) {
  EXPECT_EQ(schemaArgNames("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, "
                           "int[2] stride=[1, 1], int[2] padding=[0, 0], int[2] dilation=[1, 1], "
                           "int groups=1) -> Tensor"),
            (Names{"input", "weight", "bias", "stride", "padding", "dilation", "groups"}));
  EXPECT_EQ(schemaArgNames("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
                           "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"),
            (Names{"self", "dtype", "non_blocking", "copy", "memory_format"}));
  EXPECT_EQ(schemaArgNames("aten::f((Tensor, Tensor) pair, Dict(str, Tensor) d, Tensor(a!)[] out) -> ()"),
            (Names{"pair", "d", "out"}));
}

// A wildcard alias set ("t(c -> *)") holds a '*' and an arrow: neither ends
// the argument nor drops it, so the positions after it stay right.
TEST(OpSchema, WildcardAliasKeepsItsPosition) {
  EXPECT_EQ(schemaArgNames("aten::append.t(t[](a!) self, t(c -> *) el, int n) -> t[](a!)"),
            (Names{"self", "el", "n"}));
}

// A string default may hold the characters that split arguments.
TEST(OpSchema, StringDefaultsAreOpaque) {
  EXPECT_EQ(schemaArgNames("aten::g(Tensor self, str mode=\"a, b)\", int k=0) -> Tensor"),
            (Names{"self", "mode", "k"}));
  EXPECT_EQ(schemaArgNames("aten::g(Tensor self, str mode='x\\'y,z', int k=0) -> Tensor"),
            (Names{"self", "mode", "k"}));
}

// c10d's registered ops, as torch 2.x records them: custom class types.
TEST(OpSchema, C10dClassTypes) {
  EXPECT_EQ(schemaArgNames("c10d::allreduce_(Tensor[] tensors, "
                           "__torch__.torch.classes.c10d.ProcessGroup process_group, "
                           "__torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, "
                           "int timeout) -> (Tensor[], __torch__.torch.classes.c10d.Work)"),
            (Names{"tensors", "process_group", "reduce_op", "sparse_indices", "timeout"}));
}

TEST(OpSchema, NoArgumentList) {
  EXPECT_TRUE(schemaArgNames("").empty());
  EXPECT_TRUE(schemaArgNames("aten::relu").empty());
  EXPECT_TRUE(schemaArgNames("aten::rand() -> Tensor").empty());
}

}  // namespace
}  // namespace etb::trace
