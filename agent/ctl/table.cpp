#include "agent/ctl/table.hpp"

#include <algorithm>

namespace nvdra::ctl {

void Table::add(std::vector<std::string> row) {
  row.resize(header_.size());
  for (auto& cell : row)
    if (cell.empty()) cell.assign(1, '-');  // not = "-": g++ 12 -Wrestrict false positive
  rows_.push_back(std::move(row));
}

std::string Table::render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      out += cells[c];
      if (c + 1 < cells.size()) out.append(width[c] - cells[c].size() + 2, ' ');
    }
    out += '\n';
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace nvdra::ctl
