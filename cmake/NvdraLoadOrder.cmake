# nvdra_load_order(target): the shared libraries most of an exec's symbol lookups end in come first in the
# executable's DT_NEEDED (issue #33: start). The dynamic loader searches the global scope for every symbol an
# object binds at load, in DT_NEEDED order, breadth first. Debian links libcrypto with -z now, so each exec
# of the agent looks up 3,377 of libcrypto's own symbols and 1,762 of libstdc++'s; with libcrypto 8th and
# libstdc++ 10th in the scope, each lookup first walked seven to nine other libraries' hash tables. In the
# order below an exec of the agent costs 9.16 M instructions instead of 10.99 M (callgrind, `--version`); of
# the orders tried this one cost least.
#
# Moving a library forward changes which copy a symbol binds to only where two libraries in the scope define
# it. Here those are the math functions glibc exports from both libc and libm (the same code) and the
# basic_stringbuf and operator+ instantiations yaml-cpp exports besides libstdc++'s own (inline templates,
# identical by the ODR); now libc's and libstdc++'s copies win. Release trees only, as NvdraStaticDeps.cmake:
# sanitizer runtimes want their own place in the scope.
function(nvdra_load_order target)
  if(NOT NVDRA_STATIC_CXX_DEPS OR NVDRA_ANY_SANITIZER)
    return()
  endif()
  # Link options come before the objects and libraries on the link line, so lld records these first.
  target_link_options(${target} PRIVATE ${OPENSSL_CRYPTO_LIBRARY} -lstdc++ -lc ${OPENSSL_SSL_LIBRARY})
endfunction()
