#pragma once
// ClaimStatus, one prepared claim as the checkpoint records it, and ClaimRows, the snapshot's list
// of them. The rows are immutable and shared: the per-claim cache, the agent's snapshot and the
// D-Bus service's copy of it hold the same rows, so a change to one claim on a node with 1,000
// costs pointer copies, not 1,000 rows of strings per copy (issue #33: copying them after every
// kubelet call was half the loop's work at 1,000 claims). Equality compares contents, shortcut
// by identity.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/iterator/indirect_iterator.hpp>

namespace nvdra::systemd_bus {

struct ClaimStatus {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string driver;
  std::string state;                 // PrepareStarted | PrepareCompleted
  std::vector<std::string> devices;  // device names
  bool operator==(const ClaimStatus&) const = default;
};

using ClaimRow = std::shared_ptr<const ClaimStatus>;

class ClaimRows {
 public:
  using value_type = ClaimStatus;
  using const_iterator = boost::indirect_iterator<std::vector<ClaimRow>::const_iterator>;
  using iterator = const_iterator;

  ClaimRows() = default;
  ClaimRows(std::initializer_list<ClaimStatus> rows) {
    for (const auto& r : rows) push_back(r);
  }

  const_iterator begin() const { return const_iterator(rows_.begin()); }
  const_iterator end() const { return const_iterator(rows_.end()); }
  std::size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  const ClaimStatus& operator[](std::size_t i) const { return *rows_[i]; }

  void push_back(ClaimStatus row) { rows_.push_back(std::make_shared<const ClaimStatus>(std::move(row))); }
  void push_back(ClaimRow row) { rows_.push_back(std::move(row)); }
  void reserve(std::size_t n) { rows_.reserve(n); }
  void clear() { rows_.clear(); }
  const std::vector<ClaimRow>& shared() const { return rows_; }

  bool operator==(const ClaimRows& other) const {
    return std::equal(rows_.begin(), rows_.end(), other.rows_.begin(), other.rows_.end(),
                      [](const ClaimRow& a, const ClaimRow& b) { return a == b || *a == *b; });
  }

 private:
  std::vector<ClaimRow> rows_;
};

}  // namespace nvdra::systemd_bus
