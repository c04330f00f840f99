#pragma once
// StderrSink — writes each log record to stderr in one of the LogShapes, one write(2) per record so
// lines from different threads never interleave.
#include <spdlog/sinks/base_sink.h>

#include <mutex>

#include "agent/runtime/logging.hpp"

namespace nvdra::runtime {

class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit StderrSink(LogShape shape) : shape_(shape) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  LogShape shape_;
};

// Exposed for tests: the exact bytes a record becomes.
std::string format_record(LogShape shape, const spdlog::details::log_msg& msg);

}  // namespace nvdra::runtime
