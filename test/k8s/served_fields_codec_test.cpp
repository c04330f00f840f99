// The ServedFieldsCache file's bytes: what is written reads back, and nothing else is taken for it.
#include "k8s/served_fields_codec.hpp"

#include <gtest/gtest.h>

namespace nvdra::k8s {
namespace {

TEST(ServedFieldsCodec, WhatIsWrittenReadsBack) {
  ServedFieldsEntry e{"/openapi/v3/apis/resource.k8s.io/v1?hash=ABC", ServedFields{true, false}};
  const auto text = encode_served_fields(e);
  EXPECT_EQ(text, R"({"documentPath":"/openapi/v3/apis/resource.k8s.io/v1?hash=ABC",)"
                  R"("listAttributes":true,"multipleAllocations":false})");
  EXPECT_EQ(decode_served_fields(text), e);
}

TEST(ServedFieldsCodec, AnythingButExactlyThatShapeIsAMiss) {
  for (const char* bad : {"", "null", "[]", "{}", R"({"documentPath":"p","listAttributes":true})",
                          R"({"documentPath":"","listAttributes":true,"multipleAllocations":true})",
                          R"({"documentPath":"p","listAttributes":"yes","multipleAllocations":true})",
                          R"({"documentPath":"p","listAttributes":true,"multipleAllocations":true,"x":1})",
                          R"({"documentPath":"p","listAttributes":true,"multipleAllocations":true} trailing)"}) {
    EXPECT_FALSE(decode_served_fields(bad)) << bad;
  }
}

}  // namespace
}  // namespace nvdra::k8s
