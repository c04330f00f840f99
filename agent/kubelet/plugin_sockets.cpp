#include "agent/kubelet/plugin_sockets.hpp"

#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace nvdra::kubelet {
namespace {

std::string base64url_unpadded(const unsigned char* data, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const unsigned v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (n - i == 1) {
    const unsigned v = data[i] << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (n - i == 2) {
    const unsigned v = (data[i] << 16) | (data[i + 1] << 8);
    for (int s = 18; s >= 6; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  return out;
}

std::string hashed(const std::string& input, std::size_t bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest.data());
  return base64url_unpadded(digest.data(), bytes);
}

bool fits(const std::string& path) { return path.size() <= kMaxSocketPath; }

void require_fit(const std::string& path, const char* flag) {
  if (fits(path)) return;
  throw std::invalid_argument("socket path " + path + " is " + std::to_string(path.size()) +
                              " bytes; a unix socket path may have at most " + std::to_string(kMaxSocketPath) +
                              " bytes: choose a shorter " + flag);
}

}  // namespace

SocketPaths socket_paths(const std::string& driver, const std::string& registrar_dir,
                         const std::string& plugin_data_dir, const std::string& uid) {
  SocketPaths p;
  const fs::path reg_dir(registrar_dir);
  p.dra = (fs::path(plugin_data_dir) / (uid.empty() ? "dra.sock" : "dra-" + uid + ".sock")).string();
  require_fit(p.dra, "--kubelet-plugins-directory-path");
  if (uid.empty()) {
    p.registration = (reg_dir / (driver + "-reg.sock")).string();
  } else {
    const std::string candidates[] = {
        driver + "-" + uid + "-reg.sock",
        driver + "-" + hashed(uid, 8) + "-reg.sock",
        "dra-" + hashed(driver + std::string(1, '\0') + uid, 16) + "-reg.sock",
    };
    for (const auto& name : candidates) {
      p.registration = (reg_dir / name).string();
      if (fits(p.registration)) break;
    }
  }
  require_fit(p.registration, "--kubelet-registrar-directory-path");
  return p;
}

namespace socket_file {

void ensure_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create socket directory " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0750) != 0)
    throw std::runtime_error("cannot set mode 0750 on socket directory " + dir + ": " + std::strerror(errno));
}

void remove_stale(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot inspect " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    throw std::runtime_error("socket path " + path + " is a directory; remove it or choose another directory");
  // A socket left by a crashed instance: nobody is listening on it any more, or the new socket
  // would not be ours to take. Kubelet sees the removal and re-registers us when we listen again.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error("cannot remove stale socket " + path + ": " + std::strerror(errno));
}

std::string remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return std::string("cannot remove ") + path + ": " + std::strerror(errno);
  return {};
}

}  // namespace socket_file
}  // namespace nvdra::kubelet
