#include "agent/systemd_bus/bus_message.hpp"

#include <systemd/sd-bus.h>

#include <cstring>

namespace nvdra::systemd_bus {
namespace {

std::string or_empty(const char* s) { return s ? std::string(s) : std::string(); }

Error read_error(int r, const char* signature) {
  return make_error(ErrorCode::kInvalidArgument, std::string("cannot read D-Bus value of type \"") + signature +
                                                     "\": " + std::strerror(-r));
}

}  // namespace

Message Message::ref(sd_bus_message* m) { return Message(m ? sd_bus_message_ref(m) : nullptr); }
Message Message::adopt(sd_bus_message* m) { return Message(m); }
Message::~Message() { sd_bus_message_unref(m_); }
Message::Message(const Message& other) : m_(other.m_ ? sd_bus_message_ref(other.m_) : nullptr) {}
Message& Message::operator=(const Message& other) {
  if (this != &other) {
    sd_bus_message_unref(m_);
    m_ = other.m_ ? sd_bus_message_ref(other.m_) : nullptr;
  }
  return *this;
}
Message::Message(Message&& other) noexcept : m_(other.m_) { other.m_ = nullptr; }
Message& Message::operator=(Message&& other) noexcept {
  if (this != &other) {
    sd_bus_message_unref(m_);
    m_ = other.m_;
    other.m_ = nullptr;
  }
  return *this;
}

std::string Message::member() const { return m_ ? or_empty(sd_bus_message_get_member(m_)) : ""; }
std::string Message::interface() const { return m_ ? or_empty(sd_bus_message_get_interface(m_)) : ""; }
std::string Message::path() const { return m_ ? or_empty(sd_bus_message_get_path(m_)) : ""; }
std::string Message::sender() const { return m_ ? or_empty(sd_bus_message_get_sender(m_)) : ""; }

Result<std::string> Message::read_string() {
  char type = 0;
  const char* contents = nullptr;
  int r = sd_bus_message_peek_type(m_, &type, &contents);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, "s");
  if (type != SD_BUS_TYPE_STRING && type != SD_BUS_TYPE_OBJECT_PATH && type != SD_BUS_TYPE_SIGNATURE)
    return read_error(-EINVAL, "s");
  const char* s = nullptr;
  const char text[2] = {type, '\0'};
  r = sd_bus_message_read_basic(m_, type, &s);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, text);
  return std::string(s);
}

Result<bool> Message::read_bool() {
  int b = 0;
  const int r = sd_bus_message_read_basic(m_, SD_BUS_TYPE_BOOLEAN, &b);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, "b");
  return b != 0;
}

Result<uint64_t> Message::read_u64() {
  uint64_t v = 0;
  const int r = sd_bus_message_read_basic(m_, SD_BUS_TYPE_UINT64, &v);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, "t");
  return v;
}

Result<std::vector<std::string>> Message::read_strings() {
  char** strv = nullptr;
  const int r = sd_bus_message_read_strv(m_, &strv);
  if (r < 0) return read_error(r, "as");
  std::vector<std::string> out;
  for (char** p = strv; p && *p; ++p) {
    out.emplace_back(*p);
    std::free(*p);
  }
  std::free(strv);
  return out;
}

Status Message::enter_variant(const char* contents) {
  const int r = sd_bus_message_enter_container(m_, SD_BUS_TYPE_VARIANT, contents);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, (std::string("v(") + contents + ")").c_str());
  return {};
}

Status Message::enter_array(const char* contents) {
  const int r = sd_bus_message_enter_container(m_, SD_BUS_TYPE_ARRAY, contents);
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, (std::string("a") + contents).c_str());
  return {};
}

Status Message::enter_struct(const char* contents) {
  const int r = sd_bus_message_enter_container(m_, SD_BUS_TYPE_STRUCT, contents);
  // 0 means the enclosing array has no more elements: the caller checks at_end() first.
  if (r <= 0) return read_error(r == 0 ? -ENXIO : r, (std::string("(") + contents + ")").c_str());
  return {};
}

Status Message::exit_container() {
  const int r = sd_bus_message_exit_container(m_);
  if (r < 0) return read_error(r, "end of container");
  return {};
}

bool Message::at_end() const { return sd_bus_message_at_end(m_, 0) > 0; }

Error errno_error(int negative_errno, const std::string& what) {
  const int e = -negative_errno;
  ErrorCode code = ErrorCode::kInternal;
  if (e == EACCES || e == EPERM) code = ErrorCode::kPermissionDenied;
  else if (e == ENOENT || e == ECONNREFUSED || e == ECONNRESET || e == ENOTCONN || e == ETIMEDOUT || e == EPIPE ||
           e == ESHUTDOWN)
    code = ErrorCode::kUnavailable;
  return make_error(code, what + ": " + std::strerror(e));
}

}  // namespace nvdra::systemd_bus
