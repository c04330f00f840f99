#pragma once
// ResourceSlice names as the resourceslice controller of k8s.io/dynamic-resource-allocation v0.36
// (the one upstream's kubelet plugins are built with, resourceslicecontroller.go) writes and reads
// them: generateName "<index>-<driver>-<node>-", where <index> is the slice's position in its pool
// in lowercase hex, zero-padded to at least 5 digits (more only when the pool needs them; then all
// slices use the longer form). An existing slice belongs to the position its name encodes, so either
// implementation adopts the other's slices instead of deleting and recreating them. No I/O here.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nvdra::k8s {

inline constexpr std::size_t kSliceIndexMinLength = 5;

// Digits every index of a pool of `slices` slices is written with: max(5, hex digits of slices-1).
std::size_t slice_index_length(std::size_t slices);
// "<index in hex, zero-padded to length>-<driver>-<node>-".
std::string slice_generate_name(std::size_t index, std::size_t length, std::string_view driver,
                                std::string_view node);
// The index a slice name encodes for a pool whose indexes have `length` digits: the name's first
// '-' must be at exactly `length`, the text before it a hexadecimal number (either case, as Go's
// strconv.ParseInt reads it). nullopt for any other name (upstream then deletes the slice).
std::optional<std::size_t> decode_slice_index(std::string_view name, std::size_t length);

}  // namespace nvdra::k8s
