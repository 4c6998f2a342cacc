# One INTERFACE target carries the project's warning, architecture and sanitizer flags; every
# tapdiff target links it.
add_library(tapdiff_warnings INTERFACE)
target_compile_options(tapdiff_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wnon-virtual-dtor -Wimplicit-fallthrough -Wswitch)
# GCC 12 reports false -Wrestrict positives inside std::string concatenation (GCC bug 105329).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(tapdiff_warnings INTERFACE -Wno-restrict)
endif()
if(TAPDIFF_WERROR)
  target_compile_options(tapdiff_warnings INTERFACE -Werror)
endif()
if(TAPDIFF_ARCH)
  target_compile_options(tapdiff_warnings INTERFACE -march=${TAPDIFF_ARCH})
endif()
if(TAPDIFF_SANITIZE)
  target_compile_options(tapdiff_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                         -fno-sanitize-recover=undefined)
  target_link_options(tapdiff_warnings INTERFACE -fsanitize=address,undefined)
  # Line tables only (after the build type's -g, so it wins): a report still names file and line,
  # the code is the same as with -g, and the build takes three quarters of the time.
  target_compile_options(tapdiff_warnings INTERFACE -g1)
  # ASan instrumentation makes GCC 12 report false -Wmaybe-uninitialized inside libstdc++
  # (std::regex, std::function); the normal build keeps the warning.
  target_compile_options(tapdiff_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
# The fuzz build (docs/fuzzing.md): every tapdiff target gets libFuzzer's coverage instrumentation
# and ASan + UBSan; the targets in tests/fuzz link the fuzzer's main.
if(TAPDIFF_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TAPDIFF_FUZZ: expected clang (configure with CC=clang CXX=clang++), found ${CMAKE_CXX_COMPILER_ID}")
  endif()
  target_compile_options(tapdiff_warnings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(tapdiff_warnings INTERFACE -fsanitize=address,undefined)
endif()
