// nvml-mock-ctl — calls one test hook of a mock libnvidia-ml.so.1 (nvml/mock/test_hooks.h) from the
// command line, so tests change the "hardware" from a process built like the rest of the tree (a
// Python process cannot load a ThreadSanitizer-built mock: TSan's runtime cannot be preloaded).
//   nvml-mock-ctl <library> <hook> [args...]     exit status: the hook's nvmlReturn_t (2: bad usage)
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nvml/mock/test_hooks.h"

namespace {

unsigned long long number(const char* s) { return std::strtoull(s, nullptr, 0); }

template <class Fn>
Fn hook(void* lib, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(lib, name));
}

int usage(const char* why) {
  std::fprintf(stderr, "nvml-mock-ctl: %s\nusage: nvml-mock-ctl <library> <hook> [args...]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage("missing arguments");
  void* lib = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return usage(::dlerror());
  const std::string name = argv[2];
  const std::vector<const char*> a(argv + 3, argv + argc);
  if (::dlsym(lib, name.c_str()) == nullptr) return usage(("no hook " + name).c_str());
  if (name == "nvdraMockInjectEvent" && a.size() == 5)
    return hook<decltype(&nvdraMockInjectEvent)>(lib, argv[2])(a[0], number(a[1]), number(a[2]),
                                                               static_cast<unsigned>(number(a[3])),
                                                               static_cast<unsigned>(number(a[4])));
  if (name == "nvdraMockSetGpuLost" && a.size() == 2)
    return hook<decltype(&nvdraMockSetGpuLost)>(lib, argv[2])(a[0], static_cast<int>(number(a[1])));
  if (name == "nvdraMockSetRecoveryAction" && a.size() == 2)
    return hook<decltype(&nvdraMockSetRecoveryAction)>(lib, argv[2])(a[0], static_cast<unsigned>(number(a[1])));
  if (name == "nvdraMockSetEventsSupported" && a.size() == 2)
    return hook<decltype(&nvdraMockSetEventsSupported)>(lib, argv[2])(a[0], static_cast<int>(number(a[1])));
  if (name == "nvdraMockSetFabricState" && a.size() == 2)
    return hook<decltype(&nvdraMockSetFabricState)>(lib, argv[2])(a[0], static_cast<int>(number(a[1])));
  if (name == "nvdraMockSetFabricClique" && a.size() == 2)
    return hook<decltype(&nvdraMockSetFabricClique)>(lib, argv[2])(a[0], static_cast<long long>(number(a[1])));
  if (name == "nvdraMockFailNext" && a.size() == 3)
    return hook<decltype(&nvdraMockFailNext)>(lib, argv[2])(a[0], static_cast<int>(number(a[1])),
                                                            static_cast<unsigned>(number(a[2])));
  if (name == "nvdraMockResetState" && a.empty()) return hook<decltype(&nvdraMockResetState)>(lib, argv[2])();
  return usage(("wrong arguments for " + name).c_str());
}
