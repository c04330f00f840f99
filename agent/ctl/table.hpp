#pragma once
// Table — aligned text columns for people: a header row, then rows; each column as wide as its
// widest cell, two spaces apart, the last column unpadded. Empty cells print as "-" so columns
// never look shifted.
#include <string>
#include <vector>

namespace nvdra::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row);
  std::string render() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace nvdra::ctl
