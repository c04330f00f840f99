#include "agent/drivers/domain_steps.hpp"

#include <filesystem>
#include <fstream>

#include "agent/base/crash_point.hpp"
#include "agent/drivers/node_labels.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "imex/driver_managed.hpp"

namespace nvdra::drivers {

namespace fs = std::filesystem;

namespace {

// <dir>/imexd.cfg.tmpl, written whole and renamed into place (0644 in a 0755 directory). Blocking.
Status write_domain_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec) fs::permissions(dir, fs::perms(0755), ec);
  if (ec) return make_error(ErrorCode::kInternal, "cannot create domain directory " + dir.string() + ": " + ec.message());
  const auto file = dir / std::string(imex::kDaemonTemplateFile);
  const auto tmp = dir / (std::string(imex::kDaemonTemplateFile) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << imex::daemon_config_template();
    out.flush();
    if (!out) return make_error(ErrorCode::kInternal, "cannot write " + tmp.string());
  }
  fs::permissions(tmp, fs::perms(0644), ec);
  if (!ec) fs::rename(tmp, file, ec);
  if (ec) return make_error(ErrorCode::kInternal, "cannot write " + file.string() + ": " + ec.message());
  return {};
}

}  // namespace

DomainDirectoryStep::DomainDirectoryStep(runtime::WorkerPool& pool, std::string plugin_dir)
    : pool_(pool), plugin_dir_(std::move(plugin_dir)) {}

boost::asio::awaitable<Status> DomainDirectoryStep::apply(DomainPrepare& c) {
  const fs::path dir = fs::path(plugin_dir_) / "domains" / c.domain_id;
  co_return co_await pool_.run([dir] { return write_domain_dir(dir); });
}

boost::asio::awaitable<Status> DomainDirectoryStep::undo(DomainPrepare&) { co_return Status{}; }
boost::asio::awaitable<Status> DomainDirectoryStep::recover(DomainPrepare&) { co_return Status{}; }

boost::asio::awaitable<Status> NodeLabelStep::apply(DomainPrepare& c) {
  const std::string key(imex::kDomainLabel);
  if (auto st = co_await labels_->load(); !st) co_return st;
  const auto holder = labels_->value(key);
  if (holder && *holder != c.domain_id) co_return imex::label_conflict_error(*holder, c.domain_id);
  if (!holder)
    if (auto st = co_await labels_->write(key, c.domain_id); !st) co_return st;
  crash_point("imex-dm.prepare.after-label");
  co_return Status{};
}

boost::asio::awaitable<Status> NodeLabelStep::undo(DomainPrepare& c) {
  if (!labels_) co_return Status{};
  if (auto st = co_await labels_->load(); !st) co_return st;
  const std::string key(imex::kDomainLabel);
  // Another domain's label stays.
  if (!c.domain_id.empty() && labels_->value(key) == c.domain_id)
    if (auto st = co_await labels_->write(key, std::nullopt); !st) co_return st;
  crash_point("imex-dm.unprepare.after-label-check");
  co_return Status{};
}

boost::asio::awaitable<Status> NodeLabelStep::recover(DomainPrepare&) { co_return Status{}; }

}  // namespace nvdra::drivers
