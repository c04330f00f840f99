#pragma once
// Where a driver's two unix sockets live, and how they are put there
// (../shared/reference/kubelet-dra-protocol.md §3):
//  - registration: <registrar-dir>/<driver>-reg.sock
//  - DRA:          <plugins-dir>/<driver>/dra.sock
// With a rolling-update UID (--rolling-update-uid, or POD_UID in a DaemonSet) both names are unique
// per instance, as kubelet 1.33+ supports, so an old and a new agent can be registered at once:
//  - DRA:          dra-<uid>.sock
//  - registration: the first of <driver>-<uid>-reg.sock, <driver>-<h8>-reg.sock, dra-<h16>-reg.sock
//    whose full path fits a unix socket (h8/h16: unpadded base64url of the first 8/16 bytes of
//    SHA-256(uid) / SHA-256(driver + "\0" + uid)), the 1.37 helper's rule.
#include <cstddef>
#include <string>

namespace nvdra::kubelet {

// sun_path is 108 bytes including the terminating NUL.
inline constexpr std::size_t kMaxSocketPath = 107;

struct SocketPaths {
  std::string dra;
  std::string registration;
};

// Throws std::invalid_argument naming the path, its length and the limit when a path cannot fit.
SocketPaths socket_paths(const std::string& driver, const std::string& registrar_dir,
                         const std::string& plugin_data_dir, const std::string& rolling_update_uid);

// Listening-socket file handling; blocking file-system calls (run them on the worker pool).
namespace socket_file {
// Creates the directory (mode 0750) when missing. Throws std::runtime_error naming it.
void ensure_dir(const std::string& dir);
// Removes a leftover socket (or other non-directory file) at `path`; a directory there is an error.
void remove_stale(const std::string& path);
// Removes `path` if it is there; errors are returned as text ("" = fine) since this runs at exit.
std::string remove(const std::string& path);
}  // namespace socket_file

}  // namespace nvdra::kubelet
