# The compute-domain.nvidia.com driver: its DriverBackend; HostManagedIMEX mode's channel ClaimHandler and
# IMEX unit watcher; driver-managed mode's claim handler, ComputeDomain watches and Node labels. Included
# by whoever links it (the agent, test/imex); AgentStatus and the checkpoint opener come from
# nvdra_agent_support (agent/CMakeLists.txt).
if(NOT TARGET nvdra_compute_domain)
  add_library(nvdra_compute_domain STATIC
    ${CMAKE_CURRENT_LIST_DIR}/clique_refresh.cpp
    ${CMAKE_CURRENT_LIST_DIR}/compute_domain_backend.cpp
    ${CMAKE_CURRENT_LIST_DIR}/compute_domain_claims.cpp
    ${CMAKE_CURRENT_LIST_DIR}/imex_unit_watcher.cpp
    ${CMAKE_CURRENT_LIST_DIR}/domain_cache.cpp
    ${CMAKE_CURRENT_LIST_DIR}/domain_cleanup.cpp
    ${CMAKE_CURRENT_LIST_DIR}/domain_groups.cpp
    ${CMAKE_CURRENT_LIST_DIR}/domain_pipeline.cpp
    ${CMAKE_CURRENT_LIST_DIR}/domain_steps.cpp
    ${CMAKE_CURRENT_LIST_DIR}/host_managed_plan.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver_managed_claims.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver_managed_prepare.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver_managed_start.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver_managed_steps.cpp
    ${CMAKE_CURRENT_LIST_DIR}/mode_change_cleanup.cpp
    ${CMAKE_CURRENT_LIST_DIR}/node_labels.cpp)
  target_link_libraries(nvdra_compute_domain
    PUBLIC nvdra_agent_support nvdra_metrics nvdra_imex nvdra_claims nvdra_k8s nvdra_kubelet nvdra_config nvdra_systemd_bus nvdra_runtime
    PRIVATE nvdra_warnings simdjson::simdjson Boost::json PkgConfig::SYSTEMD)
endif()
