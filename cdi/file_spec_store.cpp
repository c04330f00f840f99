#include "cdi/file_spec_store.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/base/crash_point.hpp"
#include "cdi/unique_fd.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp.";

// " (ENOSPC)": the errno's name beside its text (glibc), what an operator searches for.
std::string errno_name(int err) {
  const char* name = ::strerrorname_np(err);
  return name ? std::string(" (") + name + ")" : std::string();
}

Error io_error(const std::string& what, const std::string& path, int err) {
  auto code = err == EACCES || err == EPERM ? ErrorCode::kPermissionDenied : ErrorCode::kUnavailable;
  return make_error(code, what + " " + path + ": " + std::strerror(err) + errno_name(err));
}

Status write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot write", path, errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// tmpfs and ramfs keep files in memory only: fsync there is a no-op syscall, so it is skipped.
bool memory_backed(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

int fsync_retry(int fd) {
  int rc;
  do rc = ::fsync(fd);
  while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace

Result<std::unique_ptr<FileSpecStore>> FileSpecStore::open(std::string dir, Options options) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(ErrorCode::kFailedPrecondition, "cannot create CDI root " + dir + ": " + ec.message());
    ::chmod(dir.c_str(), 0750);
  } else if (!S_ISDIR(st.st_mode)) {
    return make_error(ErrorCode::kFailedPrecondition, "CDI root " + dir + " exists but is not a directory");
  }
  // Temp files of a writer that died mid-write: never loaded by consumers, but they would pile up.
  // This process's own are live writes of another store on the same root (the two drivers share it).
  const std::string own = std::string(kTempMarker) + std::to_string(::getpid()) + ".";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (name.starts_with('.') && name.find(kTempMarker) != std::string::npos && name.find(own) == std::string::npos)
      fs::remove(entry.path(), ec);
  }
  const bool in_memory = memory_backed(dir);
  return std::unique_ptr<FileSpecStore>(new FileSpecStore(std::move(dir), std::move(options), in_memory));
}

// Phases over the whole batch: write every temp file, fsync them all, rename in order, fsync the
// directory once. On ext4 (data=ordered) the first fsync's journal commit carries the other files'
// data too, so a batch costs little more than one claim. A failure before the renames applies
// nothing; each file is whole on disk before it is renamed, so a crash anywhere is old-or-new.
Status FileSpecStore::apply(std::span<const SpecChange> changes) {
  if (changes.empty()) return {};
  std::vector<Staged> staged(changes.size());
  auto discard = [&](Error e) -> Status {
    for (auto& st : staged)
      if (!st.temp_path.empty()) ::unlink(st.temp_path.c_str());
    return e;
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    if (auto s = validate_file_name(changes[i].file_name); !s) return discard(s.error());
    if (changes[i].op != SpecOp::kWrite) continue;
    if (auto s = stage(changes[i], staged[i]); !s) {
      Error e = s.error();  // named for the spec, not only its temp file
      e.message = "writing CDI spec " + dir_ + "/" + changes[i].file_name + ": " + e.message;
      return discard(std::move(e));
    }
  }
  const size_t writes = std::count_if(staged.begin(), staged.end(), [](const Staged& st) { return bool(st.fd); });
  // One syncfs() flushes every staged file with one device flush; per-file fsync costs one each.
  const bool one_flush = options_.batch_sync == BatchSync::kSyncfs && writes > 1 && !in_memory_;
  if (one_flush) {
    UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir || ::syncfs(dir.get()) != 0) return discard(io_error("cannot syncfs", dir_, errno));
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    auto& st = staged[i];
    if (!st.fd) continue;
    if (!one_flush && !in_memory_ && fsync_retry(st.fd.get()) != 0)
      return discard(io_error("cannot fsync", st.temp_path, errno));
    step(WriteStep::kFileSynced, changes[i].file_name);
    crash_point("cdi.write.after-temp-write");  // the spec whole on disk, under its temp name
    if (::close(st.fd.release()) != 0) return discard(io_error("cannot close", st.temp_path, errno));
  }
  // Whether the directory changed: removals of specs already gone (a start that checks for an older
  // version's spec, an unprepare kubelet repeats) leave nothing to sync.
  bool changed = false;
  for (size_t i = 0; i < changes.size(); ++i) {
    const std::string final_path = dir_ + "/" + changes[i].file_name;
    Status s;
    if (changes[i].op == SpecOp::kRemove) {
      if (::unlink(final_path.c_str()) == 0)
        changed = true;
      else if (errno != ENOENT)
        s = io_error("cannot remove", final_path, errno);
    } else if (::rename(staged[i].temp_path.c_str(), final_path.c_str()) != 0) {
      s = io_error("cannot rename onto", final_path, errno);
    } else {
      changed = true;
      staged[i].temp_path.clear();
      step(WriteStep::kRenamed, changes[i].file_name);
      crash_point("cdi.write.after-rename");  // in place, the directory not yet synced
    }
    if (!s) {
      if (changed) (void)sync_dir();  // the changes before the failure stay applied: make them durable too
      return discard(s.error());
    }
  }
  return changed ? sync_dir() : Status{};
}

Status FileSpecStore::stage(const SpecChange& c, Staged& out) {
  out.temp_path = dir_ + "/." + c.file_name + std::string(kTempMarker) + std::to_string(::getpid()) + "." +
                  std::to_string(counter_.fetch_add(1));
  out.fd = UniqueFd(::open(out.temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out.fd) {
    int err = errno;
    out.temp_path.clear();
    return io_error("cannot create", dir_ + "/." + c.file_name + ".tmp.*", err);
  }
  step(WriteStep::kTempOpened, c.file_name);
  // fchmod, not the open mode: the process umask must not narrow what the runtime may read.
  if (::fchmod(out.fd.get(), options_.file_mode) != 0) return io_error("cannot chmod", out.temp_path, errno);
  std::string_view data = c.content;
  if (auto s = write_all(out.fd.get(), data.substr(0, data.size() / 2), out.temp_path); !s) return s;
  step(WriteStep::kHalfWritten, c.file_name);
  if (auto s = write_all(out.fd.get(), data.substr(data.size() / 2), out.temp_path); !s) return s;
  step(WriteStep::kWritten, c.file_name);
  return {};
}

Status FileSpecStore::sync_dir() {
  if (!in_memory_) {
    UniqueFd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return io_error("cannot open", dir_, errno);
    if (fsync_retry(fd.get()) != 0) return io_error("cannot fsync", dir_, errno);
  }
  step(WriteStep::kDirSynced, dir_);
  return {};
}

Result<std::string> FileSpecStore::read(const std::string& file_name) {
  if (auto s = validate_file_name(file_name); !s) return s.error();
  const std::string path = dir_ + "/" + file_name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return make_error(ErrorCode::kNotFound, "no CDI spec " + path);
    return io_error("cannot open", path, errno);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read", path, errno);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::vector<std::string>> FileSpecStore::list() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    auto name = entry.path().filename().string();
    if (!name.starts_with('.') && (name.ends_with(".json") || name.ends_with(".yaml"))) out.push_back(name);
  }
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot list CDI root " + dir_ + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nvdra::cdi
