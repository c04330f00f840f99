#pragma once
// CheckpointCommitter — group commit over a CheckpointStore. It owns the in-memory checkpoint;
// callers hand it claim updates and await durability. While one save runs on the worker pool,
// updates from other claims queue up; the next save writes them all at once, and each caller
// resumes when the save holding its update is durable. 64 concurrent prepares thus cost a couple
// of fsync'd writes instead of 64. Between saves the writer hands the store's idle work
// (CheckpointStore::warm) to the pool in small chunks, which makes later saves cheaper.
//
// Thread: all member functions must be called on the executor given to the constructor (the
// io_context); no locking. Cancellation: cancelling an awaiting caller returns kCancelled to it at
// once, but its update stays queued and may still become durable (as with a crash after the
// write). Errors: a failed save fails every caller in that batch with the store's error, and their
// updates are dropped from the in-memory state, so memory never runs ahead of disk for failed
// callers. Lifetime: the store and the pool must outlive the committer; the destructor waits for a
// save or warm chunk running on the pool (its result is then discarded), and no later job reaches
// the store.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_store.hpp"

namespace nvdra::runtime {
class WorkerPool;
}

namespace nvdra::claims {

// Put (claim set) or erase (claim nullopt) the entry of one claim UID.
struct ClaimUpdate {
  std::string uid;
  std::optional<CheckpointedClaim> claim;
};

class CheckpointCommitter {
 public:
  // `durable` is what the store holds now (from load(), after the boot-id check).
  CheckpointCommitter(boost::asio::any_io_executor executor, runtime::WorkerPool& pool, CheckpointStore& store,
                      Checkpoint durable);
  ~CheckpointCommitter();
  CheckpointCommitter(const CheckpointCommitter&) = delete;
  CheckpointCommitter& operator=(const CheckpointCommitter&) = delete;

  // Applies the updates to current() now and returns once they are durable (or failed). The updates
  // of one call are written together, never split across saves.
  boost::asio::awaitable<Status> commit(std::vector<ClaimUpdate> updates);
  // commit() of one claim's update, moved in (a braced list would copy the claim's JSON trees).
  boost::asio::awaitable<Status> commit_one(std::string uid, std::optional<CheckpointedClaim> claim);

  // Applies one claim's update to current() only: no save is made for it, and saves of other claims
  // leave it out. The claim's next commit() replaces it on disk. For a PrepareStarted entry that
  // nothing on the node needs after a crash (steps::ClaimStep::needs_record): the entry still guards
  // the claim's devices against concurrent prepares, and a prepare costs one save instead of two.
  void stage(std::string uid, CheckpointedClaim claim);
  // Commits a staged entry as current() has it, so start-up finds the claim (its rollback left
  // something behind). Nothing to do for a claim not staged.
  boost::asio::awaitable<Status> persist(const std::string& uid);

  // Returns once everything queued before the call has been saved (or failed); for shutdown.
  boost::asio::awaitable<void> flush();

  // The state including queued and staged updates: what the pipeline reads for idempotency checks.
  const Checkpoint& current() const;
  // What the last successful save wrote.
  const Checkpoint& durable() const;
  // Saves this committer has started (successful or not).
  uint64_t writes() const;

 private:
  struct State;
  static boost::asio::awaitable<void> write_loop(std::shared_ptr<State> state);
  static boost::asio::awaitable<void> save_queued(std::shared_ptr<State> state);
  static boost::asio::awaitable<bool> warm_chunk(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace nvdra::claims
