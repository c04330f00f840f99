#include "cdi/spec_store.hpp"

#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::cdi {

SpecChange SpecChange::write(const BuiltSpec& spec) { return write(spec.file_name, spec.content); }

std::vector<SpecChange> claim_removal(std::string_view vendor, std::string_view claim_uid) {
  auto base = transient_spec_name(vendor, kClaimClass, claim_uid);
  return {SpecChange::remove(base + std::string(kSpecExtension)),
          SpecChange::remove(base + std::string(kLegacySpecExtension))};
}

Status SpecStore::write(const BuiltSpec& spec) {
  SpecChange change = SpecChange::write(spec);
  return apply(std::span<const SpecChange>(&change, 1));
}

Status SpecStore::remove_claim(std::string_view vendor, std::string_view claim_uid) {
  auto changes = claim_removal(vendor, claim_uid);
  return apply(changes);
}

Result<bool> SpecStore::write_if_changed(const BuiltSpec& spec) {
  auto have = read(spec.file_name);
  if (have && *have == spec.content) return false;
  if (!have && have.error().code != ErrorCode::kNotFound) return have.error();
  if (auto s = write(spec); !s) return s.error();
  return true;
}

Status validate_file_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.' || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    return make_error(ErrorCode::kInvalidArgument,
                      "CDI spec file name \"" + std::string(name) +
                          "\" must be 1..255 characters, not start with '.', and contain no '/'");
  return {};
}

}  // namespace nvdra::cdi
