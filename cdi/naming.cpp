#include "cdi/naming.hpp"

#include <algorithm>
#include <cctype>

namespace nvdra::cdi {
namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

Error invalid(std::string field, std::string message) {
  Error e = make_error(ErrorCode::kInvalidArgument, std::move(message));
  e.field = std::move(field);
  return e;
}

// Alphanumeric at both ends, `extra` characters allowed in between.
bool segment_ok(std::string_view s, std::string_view extra) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || extra.find(c) != std::string_view::npos; });
}

}  // namespace

std::string kind(std::string_view vendor, std::string_view cls) {
  return std::string(vendor) + "/" + std::string(cls);
}

std::string transient_spec_name(std::string_view vendor, std::string_view cls, std::string_view id) {
  std::string safe(id);
  std::replace(safe.begin(), safe.end(), '/', '_');
  return std::string(vendor) + "-" + std::string(cls) + "_" + safe;
}

std::string claim_spec_file(std::string_view vendor, std::string_view claim_uid) {
  return transient_spec_name(vendor, kClaimClass, claim_uid) + std::string(kSpecExtension);
}

std::string legacy_gpu_base_spec_file() {
  return transient_spec_name(kGpuVendor, kDeviceClass, "base") + std::string(kLegacySpecExtension);
}

std::string claim_device_name(std::string_view claim_uid, std::string_view device) {
  return std::string(claim_uid) + "-" + std::string(device);
}

std::string qualified_device_id(std::string_view vendor, std::string_view cls, std::string_view device) {
  return kind(vendor, cls) + "=" + std::string(device);
}

Status validate_vendor(std::string_view vendor) {
  // A DNS subdomain: labels of [a-z0-9-] (CDI accepts upper case too), alnum at both ends.
  if (vendor.empty() || vendor.size() > 253)
    return invalid("vendor", "CDI vendor \"" + std::string(vendor) + "\" must be 1..253 characters");
  size_t start = 0;
  while (start <= vendor.size()) {
    size_t dot = vendor.find('.', start);
    auto label = vendor.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.size() > 63 || !segment_ok(label, "-"))
      return invalid("vendor", "CDI vendor \"" + std::string(vendor) +
                                   "\" must be a DNS subdomain: dot-separated labels of letters, digits and '-'");
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return {};
}

Status validate_class(std::string_view cls) {
  if (cls.size() > 63 || !segment_ok(cls, "-_."))
    return invalid("class", "CDI class \"" + std::string(cls) +
                                "\" must be 1..63 letters, digits, '-', '_' or '.', starting and ending alphanumeric");
  return {};
}

Status validate_device_name(std::string_view name) {
  if (!segment_ok(name, "-_.:"))
    return invalid("device", "CDI device name \"" + std::string(name) +
                                 "\" must be letters, digits, '-', '_', '.' or ':', starting and ending alphanumeric");
  return {};
}

}  // namespace nvdra::cdi
