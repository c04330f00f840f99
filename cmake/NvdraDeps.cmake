# All third-party packages, found once. Targets are linked by the folders that need them.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Boost 1.81 REQUIRED COMPONENTS json program_options)
find_package(OpenSSL REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(simdjson CONFIG REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# Core only (Registry + TextSerializer): the page is served by Beast, not prometheus-cpp's civetweb exposer.
find_package(prometheus-cpp CONFIG REQUIRED COMPONENTS core)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
find_package(GTest REQUIRED)
find_package(benchmark CONFIG REQUIRED)
# Debian's python3 (not a pyenv shim on PATH): the doubles use Debian's python3-* packages.
set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "python3 with Debian's python3-* packages")
find_package(Python3 REQUIRED COMPONENTS Interpreter)
include(NvdraStaticDeps)
include(NvdraLogging)
include(NvdraLoadOrder)

# Boost.Asio is header-only; these settings are shared by every target that includes it.
add_library(nvdra_asio INTERFACE)
target_link_libraries(nvdra_asio INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(nvdra_asio INTERFACE BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_DISABLE_BOOST_COROUTINE)
