# nvdra_add_gtest(NAME SOURCES a.cpp b.cpp LIBS x y [LABELS l])
# One executable per test file group; every TEST is registered with CTest individually.
include(GoogleTest)
function(nvdra_add_gtest name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main nvdra_warnings)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS};unit"
                       ENVIRONMENT "NVDRA_SOURCE_DIR=${CMAKE_SOURCE_DIR};NVDRA_BINARY_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# nvdra_add_pytest(NAME SCRIPT path.py [LABELS l] [TIMEOUT s] [ARGS unittest arguments, e.g. a class])
# Process-level tests written with python3's unittest drive the built binaries from outside.
function(nvdra_add_pytest name)
  cmake_parse_arguments(T "" "SCRIPT;TIMEOUT" "LABELS;ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # Run as a script (unittest.main()): 'test' is also the name of Python's own test package.
  # Through run_unittest.py: a run that passed with skipped tests exits 77, so CTest counts it as
  # skipped (and the suite summary lists why) instead of a plain pass.
  add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/lib/run_unittest.py
           ${CMAKE_SOURCE_DIR}/${T_SCRIPT} -v ${T_ARGS} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS};process" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
    ENVIRONMENT "NVDRA_SOURCE_DIR=${CMAKE_SOURCE_DIR};NVDRA_BINARY_DIR=${CMAKE_BINARY_DIR};NVDRA_SANITIZED=${NVDRA_ANY_SANITIZER};PYTHONPATH=${CMAKE_SOURCE_DIR}/test/lib;PYTHONDONTWRITEBYTECODE=1")
endfunction()
