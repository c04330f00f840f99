#pragma once
// Message — one owned reference to an sd_bus_message (a method reply, a signal, a call being built).
// Copying takes another reference; moving transfers it. The readers below consume the message in
// order, as sd_bus_message_read does, and return an error naming the D-Bus signature they expected.
#include <cstdint>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

struct sd_bus_message;

namespace nvdra::systemd_bus {

class Message {
 public:
  Message() = default;
  // Takes a new reference to `m` (sd_bus_message_ref); `m` may be null.
  static Message ref(sd_bus_message* m);
  // Adopts the caller's reference without taking a new one.
  static Message adopt(sd_bus_message* m);
  ~Message();
  Message(const Message& other);
  Message& operator=(const Message& other);
  Message(Message&& other) noexcept;
  Message& operator=(Message&& other) noexcept;

  sd_bus_message* get() const { return m_; }
  explicit operator bool() const { return m_ != nullptr; }

  std::string member() const;     // "" when none
  std::string interface() const;  // "" when none
  std::string path() const;       // "" when none
  std::string sender() const;     // "" when none

  Result<std::string> read_string();             // "s", "o" or "g"
  Result<bool> read_bool();                      // "b"
  Result<uint64_t> read_u64();                   // "t"
  Result<std::vector<std::string>> read_strings();  // "as"
  // Enters a variant holding `contents` ("s", "a(ssbs)", …); leave with exit_container().
  Status enter_variant(const char* contents);
  Status enter_array(const char* contents);   // "a" + contents
  Status enter_struct(const char* contents);  // "(" + contents + ")"
  Status exit_container();
  // True at the end of the current container (sd_bus_message_at_end).
  bool at_end() const;

 private:
  explicit Message(sd_bus_message* m) : m_(m) {}
  sd_bus_message* m_ = nullptr;
};

// Maps a negative errno from sd-bus to an Error naming `what` ("GetAll on io.nvdra.Agent1").
Error errno_error(int negative_errno, const std::string& what);

}  // namespace nvdra::systemd_bus
