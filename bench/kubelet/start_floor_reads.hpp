#pragma once
// The JSON the start floor's reads need (kubelet_start_floor --reads-node): in a file of its own, linked
// only into kubelet_start_floor_reads, so that the plain floor's exec does not carry Boost.JSON's code.
#include <string>

namespace start_floor {

extern const bool kReads;  // whether this build makes reads at all

// The Node's metadata.uid from its JSON.
std::string node_uid(const std::string& node_json);

// The ResourceSlice body with every ownerReference naming `uid`.
std::string owned_by(const std::string& body, const std::string& uid);

}  // namespace start_floor
