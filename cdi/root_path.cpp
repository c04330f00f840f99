#include "cdi/root_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace nvdra::cdi {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

std::string child(const std::string& dir, std::string_view name) {
  std::string out = dir == "/" ? std::string() : dir;
  out += '/';
  out += name;
  return out;
}

std::string parent_of(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == 0 ? std::string("/") : dir.substr(0, slash);
}

std::optional<std::string> read_link_in_root(std::string_view root, std::string_view inner) {
  auto full = join_root(root, inner);
  char buf[4096];
  ssize_t n = ::readlink(full.c_str(), buf, sizeof buf);
  if (n < 0 || static_cast<size_t>(n) >= sizeof buf) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

// `inner` as its directory and a last name that is a real entry (not "", "." or "..").
std::optional<std::pair<std::string_view, std::string_view>> dir_and_name(std::string_view inner) {
  const auto slash = inner.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto name = inner.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return std::nullopt;
  return std::pair{inner.substr(0, slash), name};
}

}  // namespace

std::string join_root(std::string_view root, std::string_view inner) {
  std::string out(root);
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (inner.empty() || inner.front() != '/') out.push_back('/');
  out += inner;
  return out.empty() ? "/" : out;
}

std::optional<std::string> resolve_in_root(std::string_view root, std::string_view inner) {
  return RootResolver(std::string(root)).resolve(inner);
}

std::optional<std::string> RootResolver::resolve(std::string_view inner) {
  int links = 0;
  out_of_links_ = false;
  const auto split = dir_and_name(inner);
  if (!split) return walk("/", inner, links);
  const auto* found = last_entry(split->first, split->second, links);
  return found ? found->resolved : std::nullopt;
}

std::optional<std::string> RootResolver::link_text(std::string_view inner) {
  int links = 0;
  out_of_links_ = false;
  const auto split = dir_and_name(inner);
  const auto* found = split ? last_entry(split->first, split->second, links) : nullptr;
  return found ? found->link : std::nullopt;
}

// Most paths of a walk share their directory as written: it is resolved once, then the name alone.
const RootResolver::Entry* RootResolver::last_entry(std::string_view dir, std::string_view name, int& links) {
  std::string key(dir);  // one copy for the lookup and, when new, the entry (as entry() does)
  auto it = dirs_.find(key);
  if (it == dirs_.end()) {
    auto resolved = walk("/", dir, links);
    if (out_of_links_) return nullptr;
    it = dirs_.emplace(std::move(key), std::move(resolved)).first;
  }
  if (!it->second) return nullptr;
  return &entry(*it->second, name, links);
}

// `inner`'s components one after another, from the resolved directory `dir`; ".." climbs from
// where the links led, as the kernel's lookup does, and "." or ".." after a file is no path.
std::optional<std::string> RootResolver::walk(std::string dir, std::string_view inner, int& links) {
  bool a_directory = true;  // `dir` is one: where the walk starts, and wherever ".." led
  std::size_t i = 0;
  while (i < inner.size()) {
    std::size_t j = inner.find('/', i);
    if (j == std::string_view::npos) j = inner.size();
    const auto part = inner.substr(i, j - i);
    i = j + 1;
    if (part.empty()) continue;
    if (part == "." || part == "..") {
      struct stat st {};
      if (!a_directory && (::stat(join_root(root_, dir).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) return std::nullopt;
      a_directory = true;
      if (part == ".") continue;
      if (dir == "/") return std::nullopt;
      dir = parent_of(dir);
      continue;
    }
    const auto& found = entry(dir, part, links);
    if (!found.resolved) return std::nullopt;
    dir = *found.resolved;
    a_directory = false;
  }
  return dir;
}

const RootResolver::Entry& RootResolver::entry(const std::string& dir, std::string_view name, int& links) {
  static const Entry kMissing;
  std::string key = child(dir, name);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  Entry e;
  struct stat st {};
  if (::lstat(join_root(root_, key).c_str(), &st) == 0) {
    if (!S_ISLNK(st.st_mode)) {
      e.resolved = key;
    } else if ((e.link = read_link_in_root(root_, key)) && !e.link->empty()) {
      if (++links > kMaxLinks)
        out_of_links_ = true;
      else
        e.resolved = walk(e.link->front() == '/' ? std::string("/") : dir, *e.link, links);
    }
  }
  // A loop (or a chain too long) fails the whole resolve; what it saw on the way is not kept, as a
  // fresh count might get through it.
  if (out_of_links_) return kMissing;
  return entries_.emplace(std::move(key), std::move(e)).first->second;
}

}  // namespace nvdra::cdi
