#pragma once
// The backend of each driver kind (one place to change when a driver gains or changes its backend).
#include <memory>

#include "agent/config/options.hpp"
#include "agent/drivers/driver_backend.hpp"

namespace nvdra::drivers {

std::unique_ptr<DriverBackend> make_backend(config::DriverKind kind, RunContext& ctx);

}  // namespace nvdra::drivers
