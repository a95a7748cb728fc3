/* What differs between compilers and systems, so that the extensions build
 * with GCC and Clang (Linux, macOS) and with MSVC or mingw-w64 (Windows) from
 * one text: no source outside this header tests a platform. _cbuffers.h
 * includes it after Python.h (which sets _GNU_SOURCE and friends); it has no
 * Python in it, and other files may include it on their own.
 *
 *   PT_INLINE_ALWAYS, PT_NORETURN, PT_UNUSED   attribute spellings
 *   PT_SSE2 (with <emmintrin.h>)               SSE2 is there (GCC's __SSE2__, MSVC's _M_X64)
 *   PT_LITTLE_ENDIAN                           byte order known to be little-endian
 *   PT_HAVE_MREMAP (with <sys/mman.h>)         Linux mremap and huge-page advice
 *   pt_ctz32/64, pt_clz64, pt_popcount64       bit counts (argument non-zero for ctz/clz)
 *   pt_prefetch                                a read hint
 *   pt_mul64                                   the full 128-bit product of two uint64
 *   pt_seed64                                  64 random bits, for hash seeds (called at module init)
 *   pt_open_read, pt_read, pt_close            binary reads by fd, not inherited by children
 *   pt_memrchr                                 the last byte c in [s, s + n)
 *   pt_c_numeric_init, pt_strtod_c             strtod with '.' whatever the locale
 *   pt_malloc_trim                             give free heap back to the system (glibc only)
 *   pt_release_pages                           read pages of a file mapping leave the resident set (Linux only)
 */
#ifndef PROFSCOPE_PORTABLE_H
#define PROFSCOPE_PORTABLE_H

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#define NOGDI
#include <windows.h>
#include <bcrypt.h> /* setup.py links bcrypt on Windows */
#include <io.h>
#else
#include <unistd.h>
#endif
#if defined(__APPLE__)
#include <sys/random.h> /* getentropy */
#include <xlocale.h>    /* strtod_l */
#endif
#if defined(__linux__)
#include <sys/mman.h>
#if defined(MREMAP_FIXED) && defined(MADV_HUGEPAGE)
#define PT_HAVE_MREMAP 1
#endif
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(_MSC_VER)
#include <intrin.h>
#endif

/* ---------------------------------------------------------------- spellings */

#if defined(_MSC_VER) && !defined(__clang__)
#define PT_INLINE_ALWAYS static __forceinline
#define PT_NORETURN __declspec(noreturn)
#define PT_UNUSED
#else
#define PT_INLINE_ALWAYS static inline __attribute__((always_inline))
#define PT_NORETURN __attribute__((noreturn))
#define PT_UNUSED __attribute__((unused))
#endif

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define PT_SSE2 1
#include <emmintrin.h>
#endif

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_WIN32)
#define PT_LITTLE_ENDIAN 1
#endif

/* ---------------------------------------------------------------- bits */

#if defined(_MSC_VER) && !defined(__clang__)
static inline int pt_ctz32(uint32_t x) {
    unsigned long i;
    _BitScanForward(&i, x);
    return (int)i;
}
static inline int pt_ctz64(uint64_t x) {
    unsigned long i;
    _BitScanForward64(&i, x);
    return (int)i;
}
static inline int pt_clz64(uint64_t x) {
    unsigned long i;
    _BitScanReverse64(&i, x);
    return 63 - (int)i;
}
static inline int pt_popcount64(uint64_t x) { /* __popcnt64 would need a POPCNT CPU */
    x -= (x >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
static inline void pt_prefetch(const void *p) {
#if defined(_M_X64)
    _mm_prefetch((const char *)p, _MM_HINT_T0);
#else
    (void)p;
#endif
}
#else
static inline int pt_ctz32(uint32_t x) { return __builtin_ctz(x); }
static inline int pt_ctz64(uint64_t x) { return __builtin_ctzll(x); }
static inline int pt_clz64(uint64_t x) { return __builtin_clzll(x); }
static inline int pt_popcount64(uint64_t x) { return __builtin_popcountll(x); }
static inline void pt_prefetch(const void *p) { __builtin_prefetch(p); }
#endif

/* a * b: the low 64 bits returned, the high ones in *hi. */
static inline uint64_t pt_mul64(uint64_t a, uint64_t b, uint64_t *hi) {
#if defined(__SIZEOF_INT128__)
    __extension__ unsigned __int128 r = (unsigned __int128)a * b;
    *hi = (uint64_t)(r >> 64);
    return (uint64_t)r;
#elif defined(_MSC_VER) && defined(_M_X64)
    return _umul128(a, b, hi);
#elif defined(_MSC_VER) && defined(_M_ARM64)
    *hi = __umulh(a, b);
    return a * b;
#else
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (uint32_t)p00;
#endif
}

/* ---------------------------------------------------------------- random seed */

/* 64 bits from the system's random source, or (when it fails) from the time
 * and this module's address. Call from PyInit: no constructors, which MSVC
 * lacks. */
static inline uint64_t pt_seed64(void) {
    uint64_t seed = 0;
    int ok = 0;
#if defined(_WIN32)
    ok = BCryptGenRandom(NULL, (PUCHAR)&seed, sizeof seed, BCRYPT_USE_SYSTEM_PREFERRED_RNG) >= 0;
#elif defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__)
    ok = getentropy(&seed, sizeof seed) == 0;
#endif
    if (!ok) {
        static const char here = 0;
        seed = ((uint64_t)(uintptr_t)&here ^ (uint64_t)time(NULL) ^ (uint64_t)clock()) * 0x9e3779b97f4a7c15ULL;
    }
    return seed;
}

/* ---------------------------------------------------------------- files */

/* Opens path (bytes from os.fsencode: UTF-8 on Windows) to read its bytes
 * unchanged; -1 with errno set on failure. */
static inline int pt_open_read(const char *path) {
#if defined(_WIN32)
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    if (n <= 0) {
        errno = ENOENT;
        return -1;
    }
    wchar_t *wide = malloc(sizeof(wchar_t) * (size_t)n);
    if (!wide) {
        errno = ENOMEM;
        return -1;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, wide, n);
    int fd = _wopen(wide, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
    free(wide);
    return fd;
#else
    int flags = O_RDONLY;
#ifdef O_CLOEXEC
    flags |= O_CLOEXEC;
#endif
#ifdef O_BINARY
    flags |= O_BINARY;
#endif
    return open(path, flags);
#endif
}

/* Up to n bytes from fd into buf: the count, 0 at the end, -1 with errno. */
static inline int64_t pt_read(int fd, void *buf, size_t n) {
#if defined(_WIN32)
    return _read(fd, buf, (unsigned)(n < 0x40000000 ? n : 0x40000000));
#else
    return (int64_t)read(fd, buf, n);
#endif
}

static inline void pt_close(int fd) {
#if defined(_WIN32)
    _close(fd);
#else
    close(fd);
#endif
}

/* ---------------------------------------------------------------- text */

/* The last c in [s, s + n), or NULL. */
static inline const char *pt_memrchr(const char *s, int c, size_t n) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return memrchr(s, c, n);
#else
    while (n--)
        if (s[n] == (char)c) return s + n;
    return NULL;
#endif
}

/* strtod in the "C" locale: Qt may set one whose decimal point is ','.
 * pt_c_numeric_init (from PyInit) returns 0 when the locale cannot be had;
 * without strtod_l (other systems) plain strtod is used. */
#if defined(_WIN32)
static _locale_t pt_c_numeric;
static inline int pt_c_numeric_init(void) {
    if (!pt_c_numeric) pt_c_numeric = _create_locale(LC_NUMERIC, "C");
    return pt_c_numeric != NULL;
}
static inline double pt_strtod_c(const char *s, char **end) { return _strtod_l(s, end, pt_c_numeric); }
#elif defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
static locale_t pt_c_numeric;
static inline int pt_c_numeric_init(void) {
    if (!pt_c_numeric) pt_c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return pt_c_numeric != (locale_t)0;
}
static inline double pt_strtod_c(const char *s, char **end) { return strtod_l(s, end, pt_c_numeric); }
#else
static inline int pt_c_numeric_init(void) { return 1; }
static inline double pt_strtod_c(const char *s, char **end) { return strtod(s, end); }
#endif

/* ---------------------------------------------------------------- heap */

static inline void pt_malloc_trim(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* The whole pages of [p, p + n), part of a read-only mapping of a file, leave the process's resident set (read
 * from the page cache again if touched). Never on other memory: madvise would drop its content. */
static inline void pt_release_pages(const void *p, size_t n) {
#if defined(__linux__) && defined(MADV_DONTNEED)
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
#else
    (void)p;
    (void)n;
#endif
}

#endif
