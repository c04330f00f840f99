// A list answer of the API server (k8s/api_responses: parse_list_response), as every reflector's
// list and the claim lookup read it. Invariant: every item kept is a whole JSON object.
#include <simdjson.h>

#include <string_view>

#include "k8s/api_responses.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(list_response) {
  const std::string_view body(reinterpret_cast<const char*>(data.data()), data.size());
  auto list = nvdra::k8s::parse_list_response(body);
  if (!list.ok()) return nvdra::fuzz::Verdict::kRejected;
  simdjson::dom::parser parser;
  for (const auto& item : list->items) {
    simdjson::dom::element e;
    NVDRA_FUZZ_CHECK(!parser.parse(item).get(e) && e.is_object());
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
