#include "agent/runtime/log_sink.hpp"

#include <boost/json.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

namespace nvdra::runtime {
namespace {

// syslog(3) priorities, as journald reads them from a "<N>" prefix (sd-daemon(3)).
int journal_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return 7;
    case spdlog::level::info: return 6;
    case spdlog::level::warn: return 4;
    case spdlog::level::err: return 3;
    case spdlog::level::critical: return 2;
    default: return 6;
  }
}

char level_letter(spdlog::level::level_enum level) {
  static constexpr char kLetters[] = {'T', 'D', 'I', 'W', 'E', 'C', 'O'};
  return kLetters[static_cast<int>(level)];
}

std::string iso_time(spdlog::log_clock::time_point tp) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(tp.time_since_epoch()) % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", fmt::gmtime(spdlog::log_clock::to_time_t(tp)),
                     static_cast<int>(ms.count()));
}

}  // namespace

std::string format_record(LogShape shape, const spdlog::details::log_msg& msg) {
  const std::string_view text(msg.payload.data(), msg.payload.size());
  const std::string_view name(msg.logger_name.data(), msg.logger_name.size());
  switch (shape) {
    case LogShape::kJournal:
      return fmt::format("<{}>{}: {}\n", journal_priority(msg.level), name, text);
    case LogShape::kJson: {
      boost::json::object line;
      line["ts"] = iso_time(msg.time);
      const auto level_name = spdlog::level::to_string_view(msg.level);
      line["level"] = std::string_view(level_name.data(), level_name.size());
      line["logger"] = name;
      line["msg"] = text;
      return boost::json::serialize(line) + "\n";
    }
    case LogShape::kText:
      break;
  }
  return fmt::format("{} {} {}: {}\n", iso_time(msg.time), level_letter(msg.level), name, text);
}

void StderrSink::sink_it_(const spdlog::details::log_msg& msg) {
  const std::string line = format_record(shape_, msg);
  // One write per record; a short write to a pipe of < PIPE_BUF bytes cannot happen, a longer line
  // is finished in a loop.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;  // stderr closed: nowhere left to report it
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace nvdra::runtime
