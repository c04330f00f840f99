#pragma once
// PrivateBus — a real dbus-daemon of our own for a test: its own config file, socket and process,
// so tests never touch the host's system bus. restart() brings it back at the same address, which
// is what a reconnecting client sees when the system bus restarts.
#include <sys/types.h>

#include <string>

namespace nvdra::test {

class PrivateBus {
 public:
  // `policy` is inserted into the <busconfig>; the default lets everyone own and call anything.
  explicit PrivateBus(std::string policy = {});
  ~PrivateBus();
  PrivateBus(const PrivateBus&) = delete;
  PrivateBus& operator=(const PrivateBus&) = delete;

  const std::string& address() const { return address_; }
  void stop();
  void restart();

 private:
  void start();
  std::string dir_;
  std::string config_;
  std::string address_;
  pid_t pid_ = -1;
};

}  // namespace nvdra::test
