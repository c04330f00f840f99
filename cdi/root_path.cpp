#include "cdi/root_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

namespace nvdra::cdi {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

std::deque<std::string> split(std::string_view p) {
  std::deque<std::string> out;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.emplace_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string join_root(std::string_view root, std::string_view inner) {
  std::string out(root);
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (inner.empty() || inner.front() != '/') out.push_back('/');
  out += inner;
  return out.empty() ? "/" : out;
}

std::optional<std::string> read_link_in_root(std::string_view root, std::string_view inner) {
  auto full = join_root(root, inner);
  char buf[4096];
  ssize_t n = ::readlink(full.c_str(), buf, sizeof buf);
  if (n < 0 || static_cast<size_t>(n) >= sizeof buf) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

std::optional<std::string> resolve_in_root(std::string_view root, std::string_view inner) {
  std::vector<std::string> done;  // resolved components so far
  std::deque<std::string> todo = split(inner);
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (done.empty()) return std::nullopt;
      done.pop_back();
      continue;
    }
    std::string path;
    for (const auto& d : done) path += "/" + d;
    path += "/" + part;
    struct stat st {};
    if (::lstat(join_root(root, path).c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) {
      done.push_back(std::move(part));
      continue;
    }
    if (++links > kMaxLinks) return std::nullopt;
    auto target = read_link_in_root(root, path);
    if (!target || target->empty()) return std::nullopt;
    auto parts = split(*target);
    if (target->front() == '/') done.clear();
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  std::string out;
  for (const auto& d : done) out += "/" + d;
  return out.empty() ? "/" : out;
}

bool exists_in_root(std::string_view root, std::string_view inner) { return resolve_in_root(root, inner).has_value(); }

}  // namespace nvdra::cdi
