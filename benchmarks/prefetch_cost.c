/* Core time that random cache lines cost a busy loop, prefetched and then used or not.
 *
 * Each iteration does WORK gather-and-update operations on a 16 KiB float array (L1
 * resident, like the dots and updates of a softmax SGD step) in four parts. MODE 0: before
 * each part it issues a quarter of N_LINES PREFETCHW of random 64-byte lines of a
 * REGION_MIB region (transparent huge pages requested), lines nothing reads later. MODE 1:
 * the same prefetches are for the lines of the iteration AHEAD iterations later, and each
 * iteration also reads and updates its own N_LINES lines before its first part. MODE 2:
 * those reads and updates without any prefetch. Prints the thread CPU nanoseconds per
 * iteration. Driven by bench_prefetch_cost.py.
 *
 * Usage: prefetch_cost REGION_MIB N_LINES WORK ITERATIONS MODE AHEAD
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define SMALL 4096

static double thread_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static inline uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void prefetch_write(const void *p) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw (%0)" ::"r"(p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s REGION_MIB N_LINES WORK ITERATIONS MODE AHEAD\n", argv[0]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int n_lines = atoi(argv[2]), work = atoi(argv[3]), mode = atoi(argv[5]);
    long iterations = atol(argv[4]), ahead = mode == 1 ? atol(argv[6]) : 0;
    char *region = aligned_alloc(1 << 21, bytes);
    uint64_t *line = malloc((iterations + ahead) * (n_lines ? n_lines : 1) * sizeof(uint64_t));
    if (region == NULL || line == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    madvise(region, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < bytes; i += 64)
        region[i] = 1;
    uint64_t lines = bytes / 64, state = 88172645463325252ull;
    for (long i = 0; i < (iterations + ahead) * n_lines; i++)
        line[i] = (xorshift(&state) % lines) * 64;
    static float small[SMALL];
    static int index[SMALL];
    for (int i = 0; i < SMALL; i++) {
        small[i] = 1.0f / (i + 1);
        index[i] = (int)(xorshift(&state) % SMALL);
    }
    double acc = 0.0;
    long used = 0;
    int at = 0;
    double t0 = thread_seconds();
    for (long it = 0; it < iterations; it++) {
        const uint64_t *own = line + it * n_lines, *later = line + (it + ahead) * n_lines;
        if (mode != 0) {
            for (int p = 0; p < n_lines; p++) {
                used += region[own[p]];
                region[own[p]] += 1;
            }
        }
        for (int part = 0; part < 4; part++) {
            if (mode != 2) {
                for (int p = part * n_lines / 4; p < (part + 1) * n_lines / 4; p++)
                    prefetch_write(region + later[p]);
            }
            for (int c = 0; c < work / 4; c++) {
                int j = index[(at + c) & (SMALL - 1)];
                acc += small[j] * 1.0001f;
                small[j] += 1e-7f;
            }
            at += work / 4;
        }
    }
    double t1 = thread_seconds();
    printf("%.3f %g %ld\n", (t1 - t0) / iterations * 1e9, acc, used);
    free(region);
    free(line);
    return 0;
}
