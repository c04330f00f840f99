#include "nvml/mock/mock_machine.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#ifndef NVDRA_MOCK_PROFILES_DIR
#error "the build sets NVDRA_MOCK_PROFILES_DIR"
#endif
#ifndef NVDRA_MOCK_DEFAULT_STATE_DIR
#error "the build sets NVDRA_MOCK_DEFAULT_STATE_DIR"
#endif

namespace nvdra::nvml::mock {
namespace {

constexpr uint64_t kTag = 0x4E56ULL << 48;  // "NV": never a user-space pointer, so never confused with one
constexpr uint64_t kTagMask = 0xFFFFULL << 48;

struct Global {
  std::mutex mu;
  int refcount = 0;
  std::shared_ptr<Session> session;
  std::string last_error;
};

Global& global() {
  static Global g;  // destroyed at dlclose/exit, so sanitizers see no leak after an unload
  return g;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : fallback;
}

std::string state_path_for(const std::string& profile_path, bool by_name) {
  std::string base = profile_path.substr(profile_path.find_last_of('/') + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".yaml") == 0) base.resize(base.size() - 5);
  const char* dir = std::getenv("NVDRA_MOCK_STATE_DIR");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/" + base + ".state";
  if (by_name) return std::string(NVDRA_MOCK_DEFAULT_STATE_DIR) + "/" + base + ".state";
  return profile_path + ".state";
}

uint64_t fnv1a(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

void* encode_handle(Ref r) {
  const uint64_t v = kTag | (static_cast<uint64_t>(r.kind) << 40) | (static_cast<uint64_t>(r.gpu & 0xFFFF) << 24) |
                     (static_cast<uint64_t>(r.gi & 0xFFF) << 12) | static_cast<uint64_t>(r.ci & 0xFFF);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

std::optional<Ref> decode_handle(const void* handle) {
  const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((v & kTagMask) != kTag) return std::nullopt;
  const unsigned kind = static_cast<unsigned>((v >> 40) & 0xFF);
  if (kind < 1 || kind > 4) return std::nullopt;
  return Ref{static_cast<Kind>(kind), static_cast<unsigned>((v >> 24) & 0xFFFF), static_cast<unsigned>((v >> 12) & 0xFFF),
             static_cast<unsigned>(v & 0xFFF)};
}

nvmlReturn_t session_init() {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (g.refcount > 0) {
    ++g.refcount;
    return NVML_SUCCESS;
  }
  const char* name = std::getenv("NVDRA_MOCK_PROFILE");
  if (name == nullptr || *name == '\0') {
    g.last_error = "NVDRA_MOCK_PROFILE is not set (a profile name under " +
                   env_or("NVDRA_MOCK_PROFILES_DIR", NVDRA_MOCK_PROFILES_DIR) + " or a path to a .yaml file)";
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  // NVDRA_MOCK_DRIVER_NODE: a file standing for the loaded kernel module (its /dev/nvidiactl). While
  // it is missing nvmlInit answers DRIVER_NOT_LOADED, as on a node whose driver is not installed yet.
  if (!driver_loaded()) {
    g.last_error = env_or("NVDRA_MOCK_DRIVER_NODE", "") + " does not exist: the NVIDIA kernel module is not loaded";
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  const std::string dir = env_or("NVDRA_MOCK_PROFILES_DIR", NVDRA_MOCK_PROFILES_DIR);
  const std::string path = resolve_profile_path(name, dir);
  auto profile = load_profile(path);
  if (!profile) {
    g.last_error = profile.error().message;
    return NVML_ERROR_UNKNOWN;
  }
  auto s = std::make_shared<Session>();
  s->profile = std::move(profile).value();
  const bool by_name = path != name;
  s->state = std::make_unique<StateFile>(state_path_for(path, by_name), s->profile);
  s->caps_root = env_or("NVDRA_MOCK_HOST_ROOT", "");
  s->driver_version = driver_version_now(s->profile);
  if (!s->caps_root.empty()) {
    // The caps of instances that exist at "boot" (the profile's layout, or an earlier process's).
    const Session& session = *s;
    s->state->with(StateFile::Access::kRead, [&](MachineState& m) {
      sync_mig_caps(session, m);
      return 0;
    });
  }
  g.session = std::move(s);
  g.last_error.clear();
  g.refcount = 1;
  return NVML_SUCCESS;
}

bool driver_loaded() {
  const char* node = std::getenv("NVDRA_MOCK_DRIVER_NODE");
  return node == nullptr || *node == '\0' || ::access(node, F_OK) == 0;
}

std::string driver_version_now(const MachineProfile& profile) {
  const char* file = std::getenv("NVDRA_MOCK_DRIVER_VERSION_FILE");
  if (file == nullptr || *file == '\0') return profile.driver_version;
  std::ifstream in(file);
  std::string version;
  if (!in || !std::getline(in, version) || version.empty()) return profile.driver_version;
  return version;
}

Session::~Session() {
  for (const auto& [gpu, fd] : attached) ::close(fd);
}

void attach_gpu(Session& s, unsigned gpu) {
  if (s.caps_root.empty() || gpu >= s.profile.gpus.size()) return;
  std::lock_guard lock(s.attach_mu);
  if (s.attached.count(gpu)) return;
  const std::string node = s.caps_root + "/dev/nvidia" + std::to_string(s.profile.gpus[gpu].minor);
  const int fd = ::open(node.c_str(), O_PATH | O_CLOEXEC);
  if (fd >= 0) s.attached.emplace(gpu, fd);
}

nvmlReturn_t session_shutdown() {
  Global& g = global();
  std::lock_guard lock(g.mu);
  // NVML reports no error for extra shutdowns (nvml.md §5.3).
  if (g.refcount > 0 && --g.refcount == 0) g.session.reset();
  return NVML_SUCCESS;
}

std::shared_ptr<Session> current_session() {
  Global& g = global();
  std::lock_guard lock(g.mu);
  return g.session;
}

std::string last_init_error() {
  Global& g = global();
  std::lock_guard lock(g.mu);
  return g.last_error;
}

nvmlReturn_t copy_out(char* dst, unsigned length, const std::string& text) {
  if (dst == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(dst, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

std::string mig_uuid(const std::string& gpu_uuid, unsigned gi, unsigned ci) {
  const std::string key = gpu_uuid + "/" + std::to_string(gi) + "/" + std::to_string(ci);
  const uint64_t a = fnv1a(key, 0x9e3779b97f4a7c15ULL), b = fnv1a(key, 0xc2b2ae3d27d4eb4fULL);
  char out[64];
  std::snprintf(out, sizeof out, "MIG-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF), static_cast<unsigned>(0x5000 | (a & 0x0FFF)),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3FFF)),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  return out;
}

}  // namespace nvdra::nvml::mock
