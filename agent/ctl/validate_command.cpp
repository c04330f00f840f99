#include "agent/ctl/validate_command.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

#include "agent/admission/config_gates.hpp"
#include "agent/admission/manifest_check.hpp"

namespace nvdra::ctl {
namespace {

std::optional<std::string> read_input(const std::string& file) {
  if (file == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) return std::nullopt;
  return text;
}

}  // namespace

int run_validate(const ValidateArgs& args, std::FILE* out, std::FILE* err) {
  auto gates = admission::parse_config_gates(args.feature_gates);
  if (!gates) {
    std::fprintf(err, "nvdractl validate: --feature-gates: %s\n", gates.error().message.c_str());
    return kValidateUsage;
  }
  const std::string name = args.file == "-" ? "<stdin>" : args.file;
  const auto text = read_input(args.file);
  if (!text) {
    std::fprintf(err, "nvdractl validate: %s: cannot read the file\n", name.c_str());
    return kValidateUnreadable;
  }
  auto report = admission::check_manifests(*text, *gates);
  if (!report) {
    std::fprintf(err, "nvdractl validate: %s: %s\n", name.c_str(), report.error().message.c_str());
    return kValidateUnreadable;
  }
  for (const auto& f : report->findings)
    std::fprintf(out, "%s: document %zu (%s): %s: %s\n", name.c_str(), f.document, f.object.c_str(), f.path.c_str(),
                 f.message.c_str());
  std::fprintf(err, "nvdractl validate: %s: %zu documents, %zu configs checked, %zu refused\n", name.c_str(),
               report->documents, report->configs, report->findings.size());
  return report->findings.empty() ? 0 : kValidateRefused;
}

}  // namespace nvdra::ctl
