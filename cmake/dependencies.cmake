# Dependencies come from Debian 12 packages, except oneDNN: 3.2 from PyPI, unpacked into .deps/onednn
# by scripts/fetch-onednn (scripts/install-deps runs both).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
find_package(fmt 9 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(dnnl 3.2 CONFIG HINTS "${PROJECT_SOURCE_DIR}/.deps/onednn")
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN >= 3.2 not found: run scripts/fetch-onednn (it unpacks oneDNN into "
                      ".deps/onednn), or pass -Ddnnl_DIR=<prefix>/lib/cmake/dnnl")
endif()
find_package(GTest REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# Request bodies' Content-Encoding (gzip, deflate, zstd).
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
if(S1_BENCHMARKS AND NOT S1_SANITIZE AND NOT S1_FUZZ)
  find_package(benchmark REQUIRED)
endif()

# Boost.Asio/Beast are header-only here; build them in their C++20-coroutine mode.
add_library(s1_boost INTERFACE)
target_link_libraries(s1_boost INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(s1_boost INTERFACE BOOST_ASIO_NO_DEPRECATED BOOST_BEAST_USE_STD_STRING_VIEW)
# GCC 12 misreports Asio's awaitable frame allocator as mismatched new/delete (GCC bug 109224).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(s1_boost INTERFACE -Wno-mismatched-new-delete)
endif()
