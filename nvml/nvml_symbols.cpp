#include "nvml/nvml_symbols.hpp"

#include <dlfcn.h>

namespace nvdra::nvml {

Result<NvmlSymbols> resolve_nvml_symbols(void* handle, const std::string& path) {
  NvmlSymbols s;
#define NVDRA_NVML_REQUIRE(name)                                                                          \
  s.name = reinterpret_cast<decltype(s.name)>(::dlsym(handle, #name));                                    \
  if (s.name == nullptr)                                                                                  \
    return make_error(ErrorCode::kFailedPrecondition, path + " does not export " #name ", which nvdra needs " \
                                                      "(an NVML older than the R450 driver?)");
  NVDRA_NVML_REQUIRED_SYMBOLS(NVDRA_NVML_REQUIRE)
#undef NVDRA_NVML_REQUIRE
#define NVDRA_NVML_OPTIONAL(name)                                                \
  s.name = reinterpret_cast<decltype(s.name)>(::dlsym(handle, #name));           \
  if (s.name == nullptr) s.missing_optional.push_back(#name);
  NVDRA_NVML_OPTIONAL_SYMBOLS(NVDRA_NVML_OPTIONAL)
#undef NVDRA_NVML_OPTIONAL
  s.mock_last_error = reinterpret_cast<const char* (*)()>(::dlsym(handle, "nvdraMockLastError"));
  return s;
}

}  // namespace nvdra::nvml
