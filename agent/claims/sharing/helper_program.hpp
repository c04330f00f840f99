#pragma once
// Runs a helper program (nvidia-smi, nvidia-cuda-mps-control) to completion and captures its
// stderr, so a failure can be reported per claim with the program's own words.
//
// Blocking (fork/exec/wait): call it on the WorkerPool, never on the io_context thread. Thread-safe.
// The child gets the agent's environment plus `env`, `stdin_text` on its stdin and /dev/null as
// stdout. Bounded: stderr beyond kMaxStderrBytes is dropped.
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::claims {

inline constexpr std::size_t kMaxStderrBytes = 4096;

struct HelperProgram {
  std::vector<std::string> argv;  // argv[0] is the path of the program
  std::vector<std::string> env;   // "NAME=value", override the inherited entries
  std::string stdin_text;
};

// "<argv joined by spaces>" for messages.
std::string describe(const HelperProgram& program);

// Ok when the program exited 0. Otherwise kFailedPrecondition (could not start: the path is named)
// or kUnavailable "… exited with status N: <stderr>" / "… killed by signal N: <stderr>".
Status run_helper_program(const HelperProgram& program);

}  // namespace nvdra::claims
