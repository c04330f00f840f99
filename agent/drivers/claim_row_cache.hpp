#pragma once
// ClaimRowCache — one value derived from each checkpointed claim (a status row, a claim's device
// counts), kept by UID so that after a kubelet call only the claims it touched are read again:
// with 1,000 claims prepared, deriving every claim's value after each call was most of the loop's
// time (issue #33). When the claim count no longer matches the checkpoint's (a claim changed by
// another path: recovery, a sweep), every value is derived again. io_context thread only.
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::drivers {

template <class Row>
class ClaimRowCache {
 public:
  using Derive = std::function<Row(const std::string& uid, const claims::CheckpointedClaim& claim)>;
  explicit ClaimRowCache(Derive derive) : derive_(std::move(derive)) {}

  // Every claim derived again (also the first time).
  void rebuild(const claims::Checkpoint& cp) {
    rows_.clear();
    for (const auto& [uid, claim] : cp.claims) rows_.emplace(uid, derive_(uid, claim));
    known_ = true;
    ++rebuilds_;
  }

  // The claims `uids` derived again (gone ones dropped), or every claim when that leaves the cache
  // out of step with the checkpoint.
  template <class Uids>
  void update(const claims::Checkpoint& cp, const Uids& uids) {
    if (!known_) return rebuild(cp);
    for (const std::string& uid : uids) {
      if (auto it = cp.claims.find(uid); it != cp.claims.end())
        rows_.insert_or_assign(uid, derive_(uid, it->second));
      else
        rows_.erase(uid);
    }
    if (rows_.size() != cp.claims.size()) rebuild(cp);
  }

  void forget() { rows_.clear(), known_ = false; }
  const std::map<std::string, Row>& rows() const { return rows_; }  // by UID, as the checkpoint orders them
  // How many times every row was derived again: a change tells a caller keeping sums over the rows
  // that one update was not enough.
  uint64_t rebuilds() const { return rebuilds_; }

 private:
  Derive derive_;
  std::map<std::string, Row> rows_;
  bool known_ = false;
  uint64_t rebuilds_ = 0;
};

}  // namespace nvdra::drivers
