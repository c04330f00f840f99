#include "nvml/mock/mock_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>

namespace nvdra::nvml::mock {

MachineState initial_state(const MachineProfile& profile) {
  MachineState st;
  st.fingerprint = profile.fingerprint;
  for (const auto& gpu : profile.gpus) {
    GpuState g;
    g.mig_current = g.mig_pending = gpu.mig_enabled ? 1 : 0;
    for (const auto& dev : gpu.mig_devices) {
      const GiProfileSpec* prof = gpu.product->profile_by_id(dev.profile_id);
      GiRecord gi{next_gi_id(g.gis, *prof), prof->id, dev.start, prof->placement_size};
      g.gis.push_back(gi);
      g.cis.push_back(CiRecord{gi.id, 0, full_ci_profile_index(prof->slice_count), 0, prof->slice_count});
    }
    st.gpus.push_back(std::move(g));
  }
  return st;
}

std::string serialize_state(const MachineState& st) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "fingerprint" << YAML::Value << st.fingerprint;
  out << YAML::Key << "nextSeq" << YAML::Value << st.next_seq;
  out << YAML::Key << "gpus" << YAML::Value << YAML::BeginSeq;
  for (const auto& g : st.gpus) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "mig" << YAML::Value << g.mig_current << YAML::Key << "pending"
        << YAML::Value << g.mig_pending << YAML::Key << "persistence" << YAML::Value << g.persistence << YAML::Key
        << "lost" << YAML::Value << g.lost << YAML::Key << "recovery" << YAML::Value << g.recovery_action
        << YAML::Key << "events" << YAML::Value << g.events_supported << YAML::Key << "fabric" << YAML::Value
        << g.fabric_state << YAML::Key << "clique" << YAML::Value << g.fabric_clique;
    out << YAML::Key << "gis" << YAML::Value << YAML::BeginSeq;
    for (const auto& gi : g.gis)
      out << YAML::BeginSeq << gi.id << gi.profile_id << gi.start << gi.size << YAML::EndSeq;
    out << YAML::EndSeq << YAML::Key << "cis" << YAML::Value << YAML::BeginSeq;
    for (const auto& ci : g.cis)
      out << YAML::BeginSeq << ci.gi_id << ci.id << ci.profile_id << ci.start << ci.size << YAML::EndSeq;
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "failures" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : st.failures)
    out << YAML::Flow << YAML::BeginSeq << f.function << f.rc << f.remaining << YAML::EndSeq;
  out << YAML::EndSeq << YAML::Key << "events" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : st.events)
    out << YAML::Flow << YAML::BeginSeq << e.seq << e.gpu << e.type << e.data << e.gi << e.ci << YAML::EndSeq;
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::optional<MachineState> parse_state(const std::string& text) {
  try {
    YAML::Node root = YAML::Load(text);
    MachineState st;
    st.fingerprint = root["fingerprint"].as<std::string>();
    st.next_seq = root["nextSeq"].as<uint64_t>();
    for (const auto& g : root["gpus"]) {
      GpuState gs;
      gs.mig_current = g["mig"].as<unsigned>();
      gs.mig_pending = g["pending"].as<unsigned>();
      gs.persistence = g["persistence"].as<bool>();
      gs.lost = g["lost"].as<bool>();
      gs.recovery_action = g["recovery"].as<unsigned>();
      gs.events_supported = g["events"].as<bool>();
      if (g["fabric"]) gs.fabric_state = g["fabric"].as<int>();  // absent in state files written before the hook
      if (g["clique"]) gs.fabric_clique = g["clique"].as<long long>();
      for (const auto& gi : g["gis"])
        gs.gis.push_back(GiRecord{gi[0].as<unsigned>(), gi[1].as<unsigned>(), gi[2].as<unsigned>(), gi[3].as<unsigned>()});
      for (const auto& ci : g["cis"])
        gs.cis.push_back(CiRecord{ci[0].as<unsigned>(), ci[1].as<unsigned>(), ci[2].as<unsigned>(),
                                  ci[3].as<unsigned>(), ci[4].as<unsigned>()});
      st.gpus.push_back(std::move(gs));
    }
    for (const auto& f : root["failures"])
      st.failures.push_back(InjectedFailure{f[0].as<std::string>(), f[1].as<int>(), f[2].as<unsigned>()});
    for (const auto& e : root["events"])
      st.events.push_back(EventRecord{e[0].as<uint64_t>(), e[1].as<unsigned>(), e[2].as<unsigned long long>(),
                                      e[3].as<unsigned long long>(), e[4].as<unsigned>(), e[5].as<unsigned>()});
    return st;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

StateFile::StateFile(std::string path, const MachineProfile& profile) : path_(std::move(path)), profile_(profile) {}

StateFile::~StateFile() {
  if (generation_ != nullptr) ::munmap(generation_, sizeof(uint64_t));
}

uint64_t* StateFile::generation() {
  if (generation_tried_) return generation_;
  generation_tried_ = true;
  const std::string gen_path = path_ + ".gen";
  const int fd = ::open(gen_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  struct stat st {};
  // Growing a shorter file (a process racing to create it) zero-fills; an 8-byte one is left as is.
  if (::fstat(fd, &st) == 0 && (st.st_size >= static_cast<off_t>(sizeof(uint64_t)) ||
                                ::ftruncate(fd, sizeof(uint64_t)) == 0)) {
    void* at = ::mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (at != MAP_FAILED) generation_ = static_cast<uint64_t*>(at);
  }
  ::close(fd);
  return generation_;
}

namespace {

// The whole file; nullopt when it cannot be opened (no state written yet).
std::optional<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fd);
  return text;
}

}  // namespace

MachineState StateFile::load_locked() {
  // The counter before the file: a writer replaces the file, then bumps it, so a change between the
  // two reads costs one more read later, never a missed one.
  uint64_t* gen = generation();
  const uint64_t seen = gen != nullptr ? __atomic_load_n(gen, __ATOMIC_ACQUIRE) : 0;
  if (gen != nullptr && cached_ && seen == cached_generation_) return *cached_;
  cached_generation_ = seen;
  const std::optional<std::string> text = read_file(path_);
  // Comparing the text is cheaper than parsing it and, unlike mtime, never misses a change.
  if (cached_ && text && *text == cached_text_) return *cached_;
  std::optional<MachineState> st = text ? parse_state(*text) : std::nullopt;
  if (!st || st->fingerprint != profile_.fingerprint || st->gpus.size() != profile_.gpus.size())
    st = initial_state(profile_);
  cached_text_ = text.value_or("");
  cached_ = st;
  return *st;
}

int StateFile::with(Access access, const std::function<int(MachineState&)>& fn) {
  std::lock_guard lock(mu_);
  // Writers replace the state file by rename, so a reader sees one whole state without the file
  // lock: a read is one open and read, as cheap as the agent's NVML calls at start need it to be
  // (hundreds of them; real NVML answers device queries from memory).
  int fd = -1;
  if (access == Access::kWrite) {
    const std::string lock_path = path_ + ".lock";
    fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return 17;  // NVML_ERROR_OPERATING_SYSTEM
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  MachineState st = load_locked();
  int rc = fn(st);
  if (access == Access::kWrite && rc == 0) {
    const std::string text = serialize_state(st);
    const std::string tmp = path_ + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    bool written = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f != nullptr) written = (std::fclose(f) == 0) && written;
    if (written && std::rename(tmp.c_str(), path_.c_str()) == 0) {
      cached_text_ = text;
      cached_ = st;
      // Writers hold the file lock, so the counter moves from what load_locked() saw to this.
      if (generation_ != nullptr) cached_generation_ = __atomic_add_fetch(generation_, 1, __ATOMIC_ACQ_REL);
    } else {
      rc = 17;
    }
  }
  if (fd >= 0) ::close(fd);  // releases the flock
  return rc;
}

}  // namespace nvdra::nvml::mock
