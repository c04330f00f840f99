#include "agent/claims/checkpoint/checkpoint_committer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

namespace asio = boost::asio;

void apply_updates(Checkpoint& cp, const std::vector<ClaimUpdate>& updates) {
  for (const auto& u : updates) {
    if (u.claim) cp.claims[u.uid] = *u.claim;
    else cp.claims.erase(u.uid);
  }
}

// The same for the batch's last reader: the claims' JSON trees move instead of being copied.
void move_updates(Checkpoint& cp, std::vector<ClaimUpdate>&& updates) {
  for (auto& u : updates) {
    if (u.claim) cp.claims[u.uid] = std::move(*u.claim);
    else cp.claims.erase(u.uid);
  }
}

// One awaiting caller. The timer never expires: notify() cancels it to wake the caller.
struct Waiter {
  explicit Waiter(const asio::any_io_executor& ex) : timer(ex, asio::steady_timer::time_point::max()) {}
  uint64_t seq = 0;
  asio::steady_timer timer;
  bool done = false;
  Status status;
};

// The store as the pool's jobs reach it. The committer closes it when it goes: a job already
// running finishes first (the destructor waits for it, at most one save or one warm chunk), later
// ones find it closed, so no job touches a store its owner has destroyed.
struct StoreGate {
  explicit StoreGate(CheckpointStore& s) : store(&s) {}
  std::mutex mu;
  CheckpointStore* store;  // null once closed
  void close() {
    std::lock_guard lock(mu);
    store = nullptr;
  }
};

}  // namespace

struct CheckpointCommitter::State {
  State(asio::any_io_executor ex, runtime::WorkerPool& p, CheckpointStore& s, Checkpoint d)
      : executor(std::move(ex)), pool(p), store(s), durable(std::move(d)), current(durable),
        writing_copy(std::make_shared<Checkpoint>(durable)), gate(std::make_shared<StoreGate>(s)) {}

  asio::any_io_executor executor;
  runtime::WorkerPool& pool;
  CheckpointStore& store;
  Checkpoint durable;
  Checkpoint current;  // durable + staged + queue
  std::set<std::string> staged;  // claims in current only, until their next commit
  // What the write in flight saves (then == durable), read by the pool thread meanwhile. Kept in
  // step by applying each batch, so a write costs what changed, not a copy of every claim.
  std::shared_ptr<Checkpoint> writing_copy;
  std::shared_ptr<StoreGate> gate;
  struct Batch {
    uint64_t seq;
    std::vector<ClaimUpdate> updates;
  };
  std::deque<Batch> queue;
  std::deque<std::shared_ptr<Waiter>> waiters;  // ascending seq
  uint64_t next_seq = 0;
  uint64_t writes = 0;
  bool writing = false;

  // Wakes every waiter up to `seq` with `status`.
  void notify(uint64_t seq, const Status& status) {
    while (!waiters.empty() && waiters.front()->seq <= seq) {
      auto w = std::move(waiters.front());
      waiters.pop_front();
      w->done = true;
      w->status = status;
      w->timer.cancel();
    }
  }

  void start_writer(const std::shared_ptr<State>& self) {
    if (writing) return;
    writing = true;
    asio::co_spawn(executor, write_loop(self), asio::detached);
  }
};

CheckpointCommitter::CheckpointCommitter(asio::any_io_executor executor, runtime::WorkerPool& pool,
                                         CheckpointStore& store, Checkpoint durable)
    : state_(std::make_shared<State>(std::move(executor), pool, store, std::move(durable))) {}

CheckpointCommitter::~CheckpointCommitter() { state_->gate->close(); }

const Checkpoint& CheckpointCommitter::current() const { return state_->current; }
const Checkpoint& CheckpointCommitter::durable() const { return state_->durable; }
uint64_t CheckpointCommitter::writes() const { return state_->writes; }

asio::awaitable<Status> CheckpointCommitter::commit(std::vector<ClaimUpdate> updates) {
  auto st = state_;
  if (updates.empty()) co_return Status{};
  const uint64_t seq = ++st->next_seq;
  for (const auto& u : updates) st->staged.erase(u.uid);
  apply_updates(st->current, updates);
  st->queue.push_back({seq, std::move(updates)});
  auto waiter = std::make_shared<Waiter>(st->executor);
  waiter->seq = seq;
  st->waiters.push_back(waiter);
  // The writer starts only after this coroutine suspends, so callers that run in the same turn of
  // the io_context join the first write too.
  st->start_writer(st);
  co_await waiter->timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (!waiter->done)
    co_return Error{ErrorCode::kCancelled, "cancelled while waiting for the checkpoint write; the update may still be saved",
                    {}, st->store.location()};
  co_return waiter->status;
}

asio::awaitable<Status> CheckpointCommitter::commit_one(std::string uid, std::optional<CheckpointedClaim> claim) {
  std::vector<ClaimUpdate> updates;
  updates.push_back(ClaimUpdate{std::move(uid), std::move(claim)});
  return commit(std::move(updates));
}

void CheckpointCommitter::stage(std::string uid, CheckpointedClaim claim) {
  state_->current.claims[uid] = std::move(claim);
  state_->staged.insert(std::move(uid));
}

asio::awaitable<Status> CheckpointCommitter::persist(const std::string& uid) {
  auto st = state_;
  const auto it = st->current.claims.find(uid);
  if (!st->staged.count(uid) || it == st->current.claims.end()) co_return Status{};
  co_return co_await commit_one(uid, it->second);
}

asio::awaitable<void> CheckpointCommitter::flush() {
  auto st = state_;
  if (st->queue.empty() && !st->writing) co_return;
  auto waiter = std::make_shared<Waiter>(st->executor);
  waiter->seq = st->next_seq;
  st->waiters.push_back(waiter);
  st->start_writer(st);
  co_await waiter->timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// Idle work between saves (CheckpointStore::warm) comes in chunks this small, so that an update
// queued meanwhile waits for at most one chunk (16 checksum spans: well under a millisecond).
constexpr int kWarmChunk = 16;

// Saves what is queued; once nothing is, spends the pool's idle time on warm() until the store has
// none left or an update arrives (then it saves again).
asio::awaitable<void> CheckpointCommitter::write_loop(std::shared_ptr<State> st) {
  bool warm = true;
  while (!st->queue.empty() || warm) {
    if (!st->queue.empty()) {
      co_await save_queued(st);
      warm = true;
    } else {
      st->notify(st->next_seq, Status{});  // flush() waiters: everything is saved
      warm = co_await warm_chunk(st);
    }
  }
  st->writing = false;
  st->notify(st->next_seq, Status{});  // flush() waiters with nothing left to write
}

// One save of every queued batch; wakes their callers.
asio::awaitable<void> CheckpointCommitter::save_queued(std::shared_ptr<State> st) {
  const uint64_t target = st->queue.back().seq;
  // Every queued batch: after them, writing_copy == current, exactly what this write makes durable.
  std::deque<State::Batch> written = std::exchange(st->queue, {});
  std::vector<std::string> changed;
  for (const auto& b : written) {
    apply_updates(*st->writing_copy, b.updates);
    for (const auto& u : b.updates) changed.push_back(u.uid);
  }
  ++st->writes;
  CheckpointStore* store = &st->store;
  Status status;
  try {
    status = co_await st->pool.run([gate = st->gate, copy = st->writing_copy, changed = std::move(changed)]() -> Status {
      std::lock_guard lock(gate->mu);
      if (!gate->store) return Error{ErrorCode::kCancelled, "checkpoint committer closed before the write ran"};
      return gate->store->save_changed(*copy, changed);
    });
  } catch (const std::exception& e) {  // the pool was stopped under us (shutdown)
    status = Error{ErrorCode::kUnavailable, std::string("checkpoint write did not run: ") + e.what(), {},
                   store->location()};
  }
  if (status) {
    for (auto& b : written) move_updates(st->durable, std::move(b.updates));
  } else {
    // Drop the failed batches from memory: rebuild current from disk + what was staged and what
    // queued meanwhile (staged entries were never in a save, so no save failed them).
    std::map<std::string, CheckpointedClaim> staged;
    for (const auto& uid : st->staged)
      if (auto it = st->current.claims.find(uid); it != st->current.claims.end()) staged.emplace(uid, std::move(it->second));
    *st->writing_copy = st->durable;
    st->current = st->durable;
    for (auto& [uid, claim] : staged) st->current.claims[uid] = std::move(claim);
    for (const auto& b : st->queue) apply_updates(st->current, b.updates);
  }
  st->notify(target, status);
}

asio::awaitable<bool> CheckpointCommitter::warm_chunk(std::shared_ptr<State> st) {
  try {
    co_return co_await st->pool.run([gate = st->gate] {
      std::lock_guard lock(gate->mu);
      return gate->store && gate->store->warm(kWarmChunk);
    });
  } catch (const std::exception&) {  // the pool was stopped under us (shutdown): nothing to finish
    co_return false;
  }
}

}  // namespace nvdra::claims
