# Every project target gets the same strict warnings; third-party headers are included as SYSTEM.
add_library(s1_build_flags INTERFACE)
target_compile_options(s1_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough -Werror)
# GCC 12 at -O3 reports impossible -Wrestrict overlaps in std::string concatenation (GCC bug 105651).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(s1_build_flags INTERFACE -Wno-restrict)
endif()
target_compile_definitions(s1_build_flags INTERFACE S1SERVE_VERSION="${PROJECT_VERSION}")
target_include_directories(s1_build_flags INTERFACE ${PROJECT_SOURCE_DIR}/src)
if(S1_SANITIZE)
  target_compile_options(s1_build_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  target_link_options(s1_build_flags INTERFACE -fsanitize=address,undefined)
endif()
if(S1_FUZZ)
  target_compile_options(s1_build_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined)
  target_link_options(s1_build_flags INTERFACE -fsanitize=address,undefined)
endif()
