#pragma once
// Test fixture helper: points the mock libnvidia-ml.so.1 at a machine profile with a private state
// directory, and opens it through the production dlopen path (open_nvml).
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "nvml/gpu_library.hpp"

namespace nvdra::nvml::testing {

class MockNvml {
 public:
  explicit MockNvml(const std::string& profile) {
    char tmpl[] = "/tmp/nvdra-nvml-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    ::setenv("NVDRA_MOCK_PROFILE", profile.c_str(), 1);
    ::setenv("NVDRA_MOCK_STATE_DIR", dir_.c_str(), 1);
  }
  ~MockNvml() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  MockNvml(const MockNvml&) = delete;
  MockNvml& operator=(const MockNvml&) = delete;

  static std::string library_path() { return NVDRA_MOCK_LIBRARY; }
  static std::string profiles_dir() { return NVDRA_MOCK_PROFILES_DIR; }
  const std::string& dir() const { return dir_; }

  std::unique_ptr<GpuLibrary> open() {
    auto lib = open_nvml(LoadOptions{library_path(), "/"});
    if (!lib) throw std::runtime_error(lib.error().message);
    return std::move(lib).value();
  }

  // A test hook of nvml/mock/test_hooks.h, from the already loaded (or freshly loaded) mock.
  template <class F>
  F hook(const char* name) {
    if (handle_ == nullptr) handle_ = ::dlopen(library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    void* sym = handle_ ? ::dlsym(handle_, name) : nullptr;
    if (sym == nullptr) throw std::runtime_error(std::string("mock hook missing: ") + name);
    return reinterpret_cast<F>(sym);
  }

  void close_hooks() {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = nullptr;
  }

 private:
  std::string dir_;
  void* handle_ = nullptr;
};

}  // namespace nvdra::nvml::testing
