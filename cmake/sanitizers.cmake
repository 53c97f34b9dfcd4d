# Sanitizer and fuzzing builds, each in its own build directory (the default build is unchanged):
#
#   POPRT_SANITIZE=ON        every target with AddressSanitizer + UndefinedBehaviorSanitizer
#                            (any UB report aborts the test that hit it). scripts/test.sh --sanitize.
#   POPRT_BUILD_FUZZERS=ON   libFuzzer targets in fuzz/ (needs clang's -fsanitize=fuzzer): every
#                            target is also built with coverage instrumentation so the fuzzers see
#                            the code they drive. scripts/fuzz.sh; scripts/test.sh --sanitize turns
#                            it on when the compiler supports it, so one build serves both.
#
# Included from the top-level CMakeLists.txt before any target is defined: the flags must reach
# every library, not only the fuzz targets.
option(POPRT_SANITIZE "Build everything with ASan + UBSan" OFF)
option(POPRT_BUILD_FUZZERS "Build the libFuzzer targets in fuzz/ (clang only)" OFF)

if(POPRT_SANITIZE)
  set(poprt_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options(${poprt_san})
  add_link_options(${poprt_san})
endif()

set(POPRT_FUZZERS_ENABLED OFF)
if(POPRT_BUILD_FUZZERS)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer")
  check_cxx_source_compiles([=[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
  ]=] POPRT_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(POPRT_HAVE_LIBFUZZER)
    set(POPRT_FUZZERS_ENABLED ON)
    add_compile_options(-fsanitize=fuzzer-no-link)
  else()
    message(WARNING "POPRT_BUILD_FUZZERS: ${CMAKE_CXX_COMPILER_ID} does not support -fsanitize=fuzzer; "
                    "no fuzz targets (configure with CXX=clang++)")
  endif()
endif()
