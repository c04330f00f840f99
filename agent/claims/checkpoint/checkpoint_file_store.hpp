#pragma once
// FileCheckpointStore — the real CheckpointStore: <dir>/checkpoint.json in the Go plugin's format
// (checkpoint_model.hpp), replaced atomically, so a reader (or a restart after kill -9 or power
// loss) sees the old file or the new one, never a mix.
//
// How a save replaces it: the new bytes are written in place over a spare file,
// ".checkpoint.json.spare" in the same directory, which is fsynced and then exchanges names with
// checkpoint.json (renameat2 RENAME_EXCHANGE): the old content becomes the next save's spare.
// Overwriting a file's blocks costs the file system no allocation, and the old file's are not
// freed (or discarded) each time: at 1,000 claims (1 MB) a save took half the time of creating,
// writing and renaming a new file, on ext4 and on tmpfs (issue #33). Where the exchange is refused
// (EINVAL, ENOSYS, EOPNOTSUPP: a file system without it) the store writes a new file and renames it
// over checkpoint.json from then on, as upstream's writer does. A spare with another name (a hard
// link, such as keep_copy()'s) or that is not a regular file is never written: a new one is made.
// The price: a reader that opened checkpoint.json before two saves ended (kept open, or scheduled out
// between its open and its read) may read bytes of the second (its checksum then fails): it must read
// again. Only the agent reads it, at start, under the lock; the tests' read_live_checkpoint rereads.
//
// What each step buys. The fsync before the exchange makes the new file whole on disk before its
// name can point at it, so after a power loss the file parses (old or new content) instead of
// being empty or torn, which would stop the agent (CorruptCheckpointPolicy::kRefuse). The exchange
// is visible to every process at once, so after kill -9 the restarted agent reads exactly what was
// committed. Before a spare is overwritten, the directory is fsynced once since the spare last left
// the checkpoint's name: otherwise a power loss could undo that exchange while the overwrite is half
// on disk, and checkpoint.json would name a torn file. That fsync is the only reason for it: the
// exchange itself need not outlive a power loss, as nothing the checkpoint describes does (MIG
// instances, MPS daemons, time-slice settings and CDI specs on /var/run end with the boot, and a
// checkpoint whose nodeBootID is not the current boot is replaced by an empty one at start:
// checkpoint_startup.hpp).
//
// open() creates the directory, takes an exclusive flock on <dir>/cp.lock for the store's
// lifetime (the Go plugin's checkpoint lock: two plugins on one checkpoint would corrupt it) and
// sweeps temp files left by a writer that died (the spare stays: it is overwritten, never read).
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/metrics_sink.hpp"
#include "agent/claims/checkpoint/checkpoint_encoder.hpp"
#include "agent/claims/checkpoint/checkpoint_store.hpp"

namespace nvdra::claims {

// What load() does with a file that fails to parse or verify (or, kStartEmpty only, cannot be read).
enum class CorruptCheckpointPolicy {
  // load() fails and the file stays, a copy kept in "<file>.corrupt-<fnv32 of the bytes>"
  // (upstream: the plugin crash-loops until someone fixes it).
  kRefuse,
  // The file is renamed "<file>.<why>-<UTC time, 20261124T161900Z>" (why: corrupt, unknown-version
  // or unreadable) and load() reports no checkpoint, with moved_aside and problem set: the agent
  // keeps serving and rebuilds what it can.
  kStartEmpty,
};

// renameat2(from, to, RENAME_EXCHANGE): 0, or -1 with errno.
int exchange_names(const char* from, const char* to);

struct FileCheckpointStoreOptions {
  std::string dir;  // <kubelet-plugins-dir>/<driver name>
  std::string file_name = std::string(kCheckpointFileName);
  CorruptCheckpointPolicy on_corrupt = CorruptCheckpointPolicy::kRefuse;
  // Saves and fsyncs are also reported here, labelled with the driver (nvdra_checkpoint_*).
  metrics::Sink* metrics = &metrics::null_sink();
  std::string driver;
  // Exchanges two names atomically (renameat2 RENAME_EXCHANGE); a test may refuse it to take the
  // path of a file system that does not have it.
  int (*exchange)(const char* from, const char* to) = &exchange_names;
};

class FileCheckpointStore final : public CheckpointStore {
 public:
  static Result<std::unique_ptr<FileCheckpointStore>> open(FileCheckpointStoreOptions options);
  // True for open()'s "lock held by another process" (kUnavailable: the holder may exit).
  static bool is_lock_held(const Error& error);
  ~FileCheckpointStore() override;

  Result<LoadedCheckpoint> load() override;
  Status save(const Checkpoint& checkpoint) override;
  Status save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed) override;
  // Idle work: the directory fsync the next save would need before overwriting the spare, then the
  // encoder's checksum spans.
  bool warm(int budget) override;
  CheckpointStats stats() const override;
  std::string location() const override { return path_; }

  // Writes bytes exactly as given (atomically, durably): for tests and upgrade tooling.
  Status save_bytes(const std::string& bytes);

  // Keeps the current file's content under "<file>.<why>-<UTC time>" (a hard link: the next save
  // replaces the file, not the copy); returns that path. For a checkpoint of another boot.
  Result<std::string> keep_copy(std::string_view why);

 private:
  FileCheckpointStore(FileCheckpointStoreOptions options, int lock_fd);
  Status save_pieces(std::span<const std::string_view> pieces);  // their bytes, one after another
  struct Target;
  Result<Target> open_target();  // the file a save writes: the spare, or a new file
  Status put_in_place(const std::string& written);
  Status fsync_fd(int fd, const std::string& what);
  std::string aside_path(std::string_view why) const;
  Status sync_dir();

  FileCheckpointStoreOptions options_;
  std::string path_;
  std::string spare_path_;
  int lock_fd_;
  bool exchange_works_ = true;       // until the file system refuses RENAME_EXCHANGE
  bool spare_retired_durably_ = false;  // the directory fsynced since the spare left checkpoint.json's name
  uint64_t temp_counter_ = 0;
  // A save's bytes pass through it on their way to the file (allocated at the first save, kept: no
  // page faults per save).
  static constexpr std::size_t kWriteBuffer = 64 * 1024;
  std::vector<char> write_buffer_;
  CheckpointEncoder encoder_;  // save(), save_changed() and warm() only (not re-entrant, as they are)
  std::atomic<uint64_t> saves_{0};
  std::atomic<uint64_t> fsyncs_{0};
};

}  // namespace nvdra::claims
