#pragma once
// ClaimStatus, one prepared claim as the checkpoint records it, and ClaimRows, the snapshot's list
// of them. The rows are immutable and shared, and so are the lists of them: ClaimRows is a few
// parts (one per driver in the agent's snapshot), each an immutable list of rows, so the per-claim
// cache, the agent's snapshot and the D-Bus service's copy of it hold the same rows and the same
// lists. A change to one claim on a node with 1,000 costs one new list of pointers, not 1,000 rows
// of strings per copy (issue #33: copying them after every kubelet call was half the loop's work
// at 1,000 claims), nor a list per copy. Equality compares contents, shortcut by identity.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  using Part = std::shared_ptr<const std::vector<ClaimRow>>;
  using value_type = ClaimStatus;

  // The rows of every part in turn.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ClaimStatus;
    using difference_type = std::ptrdiff_t;
    using pointer = const ClaimStatus*;
    using reference = const ClaimStatus&;
    const_iterator() = default;
    reference operator*() const { return *(**part_)[row_]; }
    pointer operator->() const { return (**part_)[row_].get(); }
    const_iterator& operator++() {
      if (++row_ == (*part_)->size()) ++part_, row_ = 0, skip_empty();
      return *this;
    }
    const_iterator operator++(int) {
      auto before = *this;
      ++*this;
      return before;
    }
    bool operator==(const const_iterator& o) const { return part_ == o.part_ && row_ == o.row_; }

   private:
    friend class ClaimRows;
    using Parts = std::vector<Part>::const_iterator;
    const_iterator(Parts part, Parts end) : part_(part), end_(end) { skip_empty(); }
    void skip_empty() {
      while (part_ != end_ && (*part_)->empty()) ++part_;
    }
    Parts part_{}, end_{};
    std::size_t row_ = 0;
  };
  using iterator = const_iterator;

  ClaimRows() = default;
  ClaimRows(std::initializer_list<ClaimStatus> rows) {
    for (const auto& r : rows) push_back(r);
  }
  // One part: `rows`, shared from now on.
  explicit ClaimRows(std::vector<ClaimRow> rows) { append(std::make_shared<std::vector<ClaimRow>>(std::move(rows))); }

  const_iterator begin() const { return const_iterator(parts_.begin(), parts_.end()); }
  const_iterator end() const { return const_iterator(parts_.end(), parts_.end()); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const ClaimStatus& operator[](std::size_t i) const { return *row(i); }
  // The shared row itself.
  const ClaimRow& row(std::size_t i) const {
    for (const auto& p : parts_) {
      if (i < p->size()) return (*p)[i];
      i -= p->size();
    }
    return (*parts_.back())[i];  // past the end: as a vector's operator[], the caller's mistake
  }

  void push_back(ClaimStatus row) { push_back(std::make_shared<const ClaimStatus>(std::move(row))); }
  void push_back(ClaimRow row) {
    // The last part grows in place only when push_back() made it and this list alone holds it
    // (lists are immutable once shared); else the row starts a part of its own.
    if (!open_ || parts_.empty() || parts_.back().use_count() > 1) {
      auto part = std::make_shared<std::vector<ClaimRow>>();
      open_ = part.get();
      parts_.push_back(std::move(part));
    }
    open_->push_back(std::move(row));
    ++size_;
  }
  void append(Part part) {
    size_ += part->size();
    parts_.push_back(std::move(part));
    open_ = nullptr;
  }
  void clear() { parts_.clear(), size_ = 0, open_ = nullptr; }
  const std::vector<Part>& parts() const { return parts_; }

  bool operator==(const ClaimRows& other) const {
    if (size_ != other.size_) return false;
    const auto same_row = [](const ClaimRow& a, const ClaimRow& b) { return a == b || *a == *b; };
    const auto same_part = [&](const Part& a, const Part& b) {
      return a == b || std::equal(a->begin(), a->end(), b->begin(), b->end(), same_row);
    };
    const auto same_cut = [](const Part& a, const Part& b) { return a->size() == b->size(); };
    // Lists cut the same way (a snapshot and the next): list by list, the shared ones at a glance.
    if (std::equal(parts_.begin(), parts_.end(), other.parts_.begin(), other.parts_.end(), same_cut))
      return std::equal(parts_.begin(), parts_.end(), other.parts_.begin(), same_part);
    return std::equal(begin(), end(), other.begin(), other.end(),
                      [](const ClaimStatus& a, const ClaimStatus& b) { return &a == &b || a == b; });
  }

 private:
  std::vector<Part> parts_;
  std::size_t size_ = 0;
  std::vector<ClaimRow>* open_ = nullptr;  // the last part, made by push_back(): not const
};

}  // namespace nvdra::systemd_bus
