#include "k8s/capacity_policy_codec.hpp"

namespace nvdra::k8s {

namespace json = boost::json;
namespace od = simdjson::ondemand;

json::object encode_capacity(const std::string& value, const CapacityRequestPolicy* policy) {
  json::object out{{"value", value}};
  if (!policy) return out;
  json::object range;
  if (!policy->min.empty()) range["min"] = policy->min;
  if (!policy->max.empty()) range["max"] = policy->max;
  if (!policy->step.empty()) range["step"] = policy->step;
  json::object p{{"default", policy->default_value}};
  if (!range.empty()) p["validRange"] = std::move(range);
  out["requestPolicy"] = std::move(p);
  return out;
}

bool decode_capacity(od::value v, std::string& value, std::optional<CapacityRequestPolicy>& policy) {
  od::object obj;
  if (v.get_object().get(obj)) return false;
  bool have_value = false;
  for (auto f : obj) {
    std::string_view key, text;
    if (f.unescaped_key().get(key)) return false;
    if (key == "value") {
      if (f.value().get_string().get(text)) return false;
      value = text;
      have_value = true;
    } else if (key == "requestPolicy") {
      od::object p;
      if (f.value().get_object().get(p)) return false;
      CapacityRequestPolicy out;
      for (auto pf : p) {
        std::string_view pk;
        if (pf.unescaped_key().get(pk)) return false;
        if (pk == "default") {
          if (pf.value().get_string().get(text)) return false;
          out.default_value = text;
        } else if (pk == "validRange") {
          od::object r;
          if (pf.value().get_object().get(r)) return false;
          for (auto rf : r) {
            std::string_view rk;
            if (rf.unescaped_key().get(rk) || rf.value().get_string().get(text)) return false;
            if (rk == "min") out.min = text;
            else if (rk == "max") out.max = text;
            else if (rk == "step") out.step = text;
          }
        }
      }
      policy = std::move(out);
    }
  }
  return have_value;
}

}  // namespace nvdra::k8s
