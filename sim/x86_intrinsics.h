// The x86 intrinsics of the simulator's vectorised kernels: POPRT_X86_INTRINSICS where the compiler
// has them. Include it last: it silences, for the rest of the file, GCC 12's warning that the
// "undefined" vector inside the AVX-512 conversion intrinsics (_mm512_cvtpd_ps) is used
// uninitialised, as maybe or, once inlined into its caller, as certainly (a known false positive:
// every lane is written).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define POPRT_X86_INTRINSICS 1
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
