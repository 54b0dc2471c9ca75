// SPDX-License-Identifier: MIT
//
// Chakra AttributeProto <-> etb Attr. Reading accepts every oneof kind (an
// integer attribute may arrive as int32, uint64, sint64, fixed32, bool...).
// Writing uses the kind recorded in Attr::type when it is a proto kind name;
// anything a plain kind cannot carry exactly (another type string, a nested
// value, a None) is written with a doc_string "etb:[type, tree]" so that our
// reader gives back the same Attr.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/model/trace.h"
#include "schemas/et_def.pb.h"

namespace etb::trace::chakra {

Attr attrFromProto(Trace& trace, const ChakraProtoMsg::AttributeProto& proto);
void attrToProto(const Trace& trace, const Attr& attr,
                 ChakraProtoMsg::AttributeProto* proto);

// The integer held by any integer (or bool) kind; nullopt otherwise.
std::optional<int64_t> protoInt(const ChakraProtoMsg::AttributeProto& proto);
// string_val / bytes_val; nullopt otherwise.
std::optional<std::string_view> protoString(const ChakraProtoMsg::AttributeProto& proto);

// Small helpers for the writer's own attributes.
void setInt64(ChakraProtoMsg::AttributeProto* p, std::string_view name, int64_t v);
void setUint64(ChakraProtoMsg::AttributeProto* p, std::string_view name, uint64_t v);
void setInt32(ChakraProtoMsg::AttributeProto* p, std::string_view name, int32_t v);
void setBool(ChakraProtoMsg::AttributeProto* p, std::string_view name, bool v);
void setDouble(ChakraProtoMsg::AttributeProto* p, std::string_view name, double v);
void setString(ChakraProtoMsg::AttributeProto* p, std::string_view name, std::string_view v);

}  // namespace etb::trace::chakra
