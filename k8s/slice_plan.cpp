#include "k8s/slice_plan.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "k8s/slice_names.hpp"
#include "k8s/taint_rules.hpp"

namespace nvdra::k8s {
namespace {

bool has_list(const PublishedDevice& d) {
  return std::any_of(d.attributes.begin(), d.attributes.end(),
                     [](const auto& kv) { return std::holds_alternative<std::vector<int64_t>>(kv.second); });
}

// What the server accepts of a device, so that desired and stored compare equal: list values
// where it serves none become their single value (or go), consumable capacity where it has none goes.
PublishedDevice publishable(PublishedDevice d, const SliceRules& rules) {
  if (!rules.list_attributes) {
    for (auto it = d.attributes.begin(); it != d.attributes.end();) {
      const auto* list = std::get_if<std::vector<int64_t>>(&it->second);
      if (!list) {
        ++it;
      } else if (list->size() == 1) {
        const int64_t single = list->front();
        it->second = single;
        ++it;
      } else {
        it = d.attributes.erase(it);
      }
    }
  }
  if (!rules.multiple_allocations) {
    d.allow_multiple_allocations = false;
    d.request_policies.clear();
  }
  return d;
}

void chunk_devices(std::vector<PublishedDevice> devices, std::size_t limit, std::vector<SliceContent>& out) {
  for (std::size_t i = 0; i < devices.size(); i += limit) {
    SliceContent c;
    const auto end = std::min(devices.size(), i + limit);
    c.devices.assign(std::make_move_iterator(devices.begin() + static_cast<std::ptrdiff_t>(i)),
                     std::make_move_iterator(devices.begin() + static_cast<std::ptrdiff_t>(end)));
    out.push_back(std::move(c));
  }
}

// Devices by slice group, groups in the order they first appear in `devices`; devices without a
// group last, under the empty key. The group is dropped: it is not part of what is stored.
std::vector<std::pair<std::string, std::vector<PublishedDevice>>> by_group(std::vector<PublishedDevice> devices) {
  std::vector<std::pair<std::string, std::vector<PublishedDevice>>> groups;
  std::vector<PublishedDevice> ungrouped;
  for (auto& d : devices) {
    auto key = std::exchange(d.slice_group, {});
    if (key.empty()) {
      ungrouped.push_back(std::move(d));
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {std::move(key), {}});
    it->second.push_back(std::move(d));
  }
  if (!ungrouped.empty()) groups.emplace_back(std::string(), std::move(ungrouped));
  return groups;
}

void sort_by_name(std::vector<PublishedDevice>& devices) {
  std::sort(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

// 1.35+: the counter sets in slices of their own, at most 8 a slice.
void counter_slices(const DriverResources& desired, std::vector<SliceContent>& out) {
  for (std::size_t i = 0; i < desired.shared_counters.size(); i += kMaxCounterSetsPerSlice) {
    SliceContent c;
    const auto end = std::min(desired.shared_counters.size(), i + kMaxCounterSetsPerSlice);
    c.shared_counters.assign(desired.shared_counters.begin() + static_cast<std::ptrdiff_t>(i),
                             desired.shared_counters.begin() + static_cast<std::ptrdiff_t>(end));
    out.push_back(std::move(c));
  }
}

// Upstream's layout under DynamicMIG (upstream-driver.md §1.1): 1.35+, the counter sets first (at most
// 8 a slice; upstream puts them all in one, which a node of more than 8 GPUs cannot store), then one
// slice per group; 1.34, one slice per group with the counter sets its devices consume. Devices are
// in name order within a group.
std::vector<SliceContent> plan_grouped(std::vector<PublishedDevice> devices, const DriverResources& desired,
                                       CounterLayout layout, std::size_t limit) {
  std::vector<SliceContent> out;
  if (layout == CounterLayout::kSeparateSlices) counter_slices(desired, out);
  for (auto& [key, members] : by_group(std::move(devices))) {
    sort_by_name(members);
    const auto first = out.size();
    chunk_devices(std::move(members), limit, out);
    // 1.34: a set travels with its consumers (a GPU's devices, far fewer than a slice holds).
    if (layout == CounterLayout::kSeparateSlices) continue;
    for (const auto& set : desired.shared_counters) {
      const bool consumed = std::any_of(out[first].devices.begin(), out[first].devices.end(), [&](const auto& d) {
        return !d.consumes_counters.empty() && d.consumes_counters.front().counter_set == set.name;
      });
      if (consumed) out[first].shared_counters.push_back(set);
    }
  }
  return out;
}

std::vector<OwnerReference> node_owner(const PoolIdentity& pool) {
  return {OwnerReference{"v1", "Node", pool.node_name, pool.node_uid, true}};
}

}  // namespace

std::vector<SliceContent> plan_slices(const DriverResources& desired, CounterLayout layout) {
  SliceRules rules;
  rules.layout = layout;
  return plan_slices(desired, rules);
}

CounterLayout layout_for(int major, int minor) {
  return (major > 1 || (major == 1 && minor >= 35)) ? CounterLayout::kSeparateSlices : CounterLayout::kWithConsumers;
}

std::vector<SliceContent> plan_slices(const DriverResources& desired, const SliceRules& rules) {
  const CounterLayout layout = rules.layout;
  auto advanced = [&](const PublishedDevice& d) {
    return !d.taints.empty() || !d.consumes_counters.empty() || (rules.lists_are_advanced && has_list(d));
  };
  std::vector<PublishedDevice> devices;
  for (const auto& d : desired.devices) {
    devices.push_back(publishable(d, rules));
    fit_taints(devices.back(), layout);
  }
  const bool strict = layout == CounterLayout::kSeparateSlices && std::any_of(devices.begin(), devices.end(), advanced);
  const std::size_t limit = strict ? kMaxDevicesPerSliceWithTaintsOrCounters : kMaxDevicesPerSlice;
  if (std::any_of(devices.begin(), devices.end(), [](const auto& d) { return !d.slice_group.empty(); }))
    return plan_grouped(std::move(devices), desired, layout, limit);
  sort_by_name(devices);
  std::vector<SliceContent> out;
  if (layout == CounterLayout::kSeparateSlices || desired.shared_counters.empty()) {
    counter_slices(desired, out);
    chunk_devices(std::move(devices), limit, out);
    return out;
  }
  // 1.34: each counter set travels with the devices that consume it (one slice per set, as the
  // upstream driver's per-GPU slices); devices without counters share plain slices.
  std::map<std::string, SliceContent> by_set;
  std::vector<PublishedDevice> plain;
  for (auto& d : devices) {
    if (d.consumes_counters.empty()) plain.push_back(std::move(d));
    else by_set[d.consumes_counters.front().counter_set].devices.push_back(std::move(d));
  }
  for (const auto& set : desired.shared_counters) {
    auto& slice = by_set[set.name];
    slice.shared_counters.push_back(set);
    out.push_back(std::move(slice));
  }
  chunk_devices(std::move(plain), kMaxDevicesPerSlice, out);
  return out;
}

WritePlan plan_writes(const std::vector<SliceContent>& desired, const std::vector<SliceObject>& actual,
                      const PoolIdentity& pool) {
  WritePlan plan;
  std::vector<const SliceObject*> ours;
  for (const auto& s : actual) {
    if (s.driver == pool.driver && s.node_name == pool.node_name && s.pool_name == pool.node_name) ours.push_back(&s);
    else plan.deletes.push_back(s);  // a stale pool of this driver on this node
  }
  // The same order for the same slices, whatever order the watch delivered them in.
  std::sort(ours.begin(), ours.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  int64_t generation = 0;
  for (const auto* s : ours) generation = std::max(generation, s->generation);

  // As upstream's controller: a slice of an older generation is obsolete; any other belongs to the
  // position its name encodes (slice_names.hpp), the first one there wins, the rest are obsolete.
  const auto index_length = slice_index_length(desired.size());
  std::vector<const SliceObject*> match(desired.size(), nullptr);
  for (const auto* s : ours) {
    const auto index = s->generation < generation ? std::nullopt : decode_slice_index(s->name, index_length);
    if (index && *index < desired.size() && match[*index] == nullptr) match[*index] = s;
    else plan.deletes.push_back(*s);
  }
  const auto owners = node_owner(pool);
  const auto count = static_cast<int64_t>(desired.size());
  auto changed = [&](std::size_t i, int64_t gen) {
    const auto* s = match[i];
    return s->content != desired[i] || s->generation != gen || s->resource_slice_count != count || s->owners != owners;
  };
  std::size_t creates = 0, updates = 0;
  for (std::size_t i = 0; i < desired.size(); ++i) {
    if (match[i] == nullptr) ++creates;
    else if (changed(i, generation)) ++updates;
  }
  // Keep the generation only when at most one slice is updated in place; anything bigger is a new
  // generation that every slice of the pool must carry (consumers use the highest one only).
  if (creates > 0 || updates > 1) ++generation;
  plan.generation = generation;
  for (std::size_t i = 0; i < desired.size(); ++i) {
    if (match[i] != nullptr && !changed(i, generation)) continue;
    SliceObject s;
    s.driver = pool.driver;
    s.node_name = pool.node_name;
    s.pool_name = pool.node_name;
    s.generation = generation;
    s.resource_slice_count = count;
    s.owners = owners;
    s.content = desired[i];
    if (match[i] != nullptr) {
      s.name = match[i]->name;
      s.uid = match[i]->uid;
      s.resource_version = match[i]->resource_version;
      plan.updates.push_back(std::move(s));
    } else {
      s.generate_name = slice_generate_name(i, index_length, pool.driver, pool.node_name);
      plan.creates.push_back(std::move(s));
    }
  }
  return plan;
}

}  // namespace nvdra::k8s
