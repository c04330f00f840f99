#pragma once
// Process-wide logging set-up. Three shapes of the same stderr stream:
//   text    — for a terminal: "2026-11-22T13:02:01.123 I component: message key=value"
//   journal — under systemd (JOURNAL_STREAM names our stderr): "<6>component: message", so
//             journald keeps the priority and adds its own timestamps
//   json    — one JSON object per line, on request (--log-format json)
#include <spdlog/common.h>

#include <optional>
#include <string>
#include <string_view>

namespace nvdra::runtime {

enum class LogFormat { kText, kJson };
enum class LogShape { kText, kJournal, kJson };

// Picks the shape: json when asked for, journal when stderr is the journal, else text.
LogShape choose_log_shape(LogFormat format);
bool stderr_is_journal();

void init_logging(LogShape shape, spdlog::level::level_enum level);

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

}  // namespace nvdra::runtime
