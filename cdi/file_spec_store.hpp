#pragma once
// The real SpecStore: files in --cdi-root, written as a temp file in the same directory
// (".<name>.tmp.<pid>.<n>", a name no CDI consumer loads), fsync, rename over the final name,
// then one fsync of the directory per apply() batch (writes of a batch are staged and synced
// together before any rename, so a failure before the renames applies nothing). A crash at any point leaves the old file or
// the new one; stray temp files are removed by open(). See spec_store.hpp for the contract.
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "cdi/spec_store.hpp"
#include "cdi/unique_fd.hpp"

namespace nvdra::cdi {

// Points in one write, for crash tests (FileSpecStore::Options::on_step).
enum class BatchSync { kPerFileFsync, kSyncfs };

enum class WriteStep { kTempOpened, kHalfWritten, kWritten, kFileSynced, kRenamed, kDirSynced };

class FileSpecStore final : public SpecStore {
 public:
  struct Options {
    // Mode of new spec files; upstream writes 0644 so the runtime (any user) can read them.
    unsigned file_mode = 0644;
    // How a batch of several writes reaches the disk before its renames: an fsync per file, or
    // one syncfs() of the file system (one device flush for the batch; it also flushes other
    // files' dirty data, so it suits a CDI root on a quiet file system such as /var/run).
    BatchSync batch_sync = BatchSync::kPerFileFsync;
    // Test hook, called at each step of each write (file name given); may kill the process.
    std::function<void(WriteStep, const std::string&)> on_step;
  };

  // Creates dir (0750) if missing, refuses a non-directory, removes stale temp files.
  static Result<std::unique_ptr<FileSpecStore>> open(std::string dir, Options options);
  static Result<std::unique_ptr<FileSpecStore>> open(std::string dir) { return open(std::move(dir), Options{}); }

  Status apply(std::span<const SpecChange> changes) override;
  Result<std::string> read(const std::string& file_name) override;
  Result<std::vector<std::string>> list() override;

  const std::string& dir() const { return dir_; }
  // The CDI root is on tmpfs or ramfs, as /var/run/cdi is: its files are in memory only, so the
  // syncs are skipped (the write steps still happen in order, and the hooks still see them).
  bool in_memory() const { return in_memory_; }

 private:
  FileSpecStore(std::string dir, Options options, bool in_memory)
      : dir_(std::move(dir)), options_(std::move(options)), in_memory_(in_memory) {}
  struct Staged {
    std::string temp_path;  // "" once renamed (nothing to clean up)
    UniqueFd fd;
  };
  Status stage(const SpecChange& change, Staged& out);
  Status sync_dir();
  void step(WriteStep s, const std::string& name) const {
    if (options_.on_step) options_.on_step(s, name);
  }

  std::string dir_;
  Options options_;
  bool in_memory_;  // tmpfs/ramfs (/var/run/cdi on a host): fsync is a no-op there and is skipped
  std::atomic<uint64_t> counter_{0};
};

}  // namespace nvdra::cdi
