// Links against glibc's GLIBC_ABI_DT_RELR version (cmake/NvdraRelr.cmake): glibc refuses to load an object
// whose relative relocations are packed (DT_RELR) unless it depends on that version, and lld 14 does not add
// the dependency itself (lld 15's -z pack-relative-relocs does). Referencing the version's one symbol makes
// the link record it, and dpkg-shlibdeps then asks for libc6 >= 2.36, the first glibc that reads DT_RELR.
extern "C" char GLIBC_ABI_DT_RELR;
// retain: --gc-sections would otherwise drop this unreferenced pointer, and the dependency with it.
__attribute__((used, retain)) void* const nvdra_glibc_abi_dt_relr = &GLIBC_ABI_DT_RELR;
