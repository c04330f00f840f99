# The compute-domain.nvidia.com driver in HostManagedIMEX mode: its DriverBackend, the channel
# ClaimHandler and the IMEX unit watcher. Included by whoever links it (the agent, test/imex);
# AgentStatus and the checkpoint opener come from nvdra_agent_support (agent/CMakeLists.txt).
if(NOT TARGET nvdra_compute_domain)
  add_library(nvdra_compute_domain STATIC
    ${CMAKE_CURRENT_LIST_DIR}/compute_domain_backend.cpp
    ${CMAKE_CURRENT_LIST_DIR}/compute_domain_claims.cpp
    ${CMAKE_CURRENT_LIST_DIR}/imex_unit_watcher.cpp)
  target_link_libraries(nvdra_compute_domain
    PUBLIC nvdra_agent_support nvdra_metrics nvdra_imex nvdra_claims nvdra_k8s nvdra_kubelet nvdra_config nvdra_systemd_bus nvdra_runtime
    PRIVATE nvdra_warnings simdjson::simdjson Boost::json PkgConfig::SYSTEMD)
endif()
