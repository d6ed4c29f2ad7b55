/*
 * timer_floor: how late a bare thread on this machine reaches absolute deadlines,
 * waiting for them the way a netrig-link worker waits for a frame's due time, with
 * no packet work at all: the floor of the daemon's release lateness under the same
 * load (bench/link_fidelity runs it beside the same TCP flow through the bare
 * forwarder).
 *
 * The wait copies crates/netrig-link/src/daemon.rs (Worker::run): timer slack 1 ns;
 * when the deadline is more than a margin away, ppoll (no fds) until deadline - margin,
 * learn the margin from how late that timer fired (1.2 x the worst recent oversleep,
 * decaying 0.5 % a wake-up, + 20 us, within 30..150 us), then spin on CLOCK_MONOTONIC
 * to the deadline; a deadline nearer than the margin is spun to. Deadlines are spaced
 * PERIOD_NS apart (12,112 ns: a 1514-byte frame at 1 Gbit/s). Every deadline that has
 * passed when the thread looks is "released" then, and its lateness (now - deadline)
 * recorded, as the worker records every frame it hands to the kernel.
 *
 * usage: timer_floor SECONDS PERIOD_NS [realtime]
 *   -> one JSON line {"count", "p50_us", "p99_us", "max_us", "over_1ms", "realtime"}
 * realtime: SCHED_FIFO priority 20, as netrig-link's "realtime": true.
 * Bounded: SECONDS is at most 60; it stops by itself.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define BUCKETS 100000 /* 1 us each, up to 100 ms; beyond counts in the last */
#define MIN_MARGIN 30000ULL
#define MAX_MARGIN 150000ULL

static uint64_t hist[BUCKETS];

static inline void spin_hint(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double quantile(uint64_t count, double q) {
    uint64_t rank = (uint64_t)(q * (double)(count - 1)), seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
        seen += hist[i];
        if (seen > rank)
            return i;
    }
    return BUCKETS;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: timer_floor SECONDS PERIOD_NS [realtime]\n");
        return 2;
    }
    double secs = atof(argv[1]);
    uint64_t period = strtoull(argv[2], NULL, 10);
    int realtime = argc > 3 && strcmp(argv[3], "realtime") == 0;
    if (!(secs > 0 && secs <= 60) || period < 1000 || period > 1000000000ULL) {
        fprintf(stderr, "timer_floor: SECONDS must be in (0, 60], PERIOD_NS in 1000..1e9\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (realtime) {
        struct sched_param p = {.sched_priority = 20};
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
            perror("timer_floor: sched_setscheduler");
            return 1;
        }
    }
    uint64_t start = now_ns(), end = start + (uint64_t)(secs * 1e9);
    uint64_t next = start + period, margin = MIN_MARGIN, count = 0, max = 0, over = 0;
    double worst = 0;
    for (;;) {
        uint64_t now = now_ns();
        /* release: every deadline passed */
        while (next <= now) {
            uint64_t late = now - next;
            uint64_t b = late / 1000;
            hist[b < BUCKETS ? b : BUCKETS - 1]++;
            if (late > max)
                max = late;
            if (late > 1000000)
                over++;
            count++;
            next += period;
        }
        if (now >= end)
            break;
        now = now_ns();
        if (next > now + margin) {
            uint64_t target = next - margin, ns = target - now;
            struct timespec ts = {.tv_sec = ns / 1000000000ULL, .tv_nsec = ns % 1000000000ULL};
            ppoll(NULL, 0, &ts, NULL);
            uint64_t woke = now_ns();
            if (woke > target) {
                uint64_t o = woke - target;
                double o_f = (double)(o < MAX_MARGIN ? o : MAX_MARGIN);
                worst = worst * 0.995 > o_f ? worst * 0.995 : o_f;
                margin = (uint64_t)(worst * 1.2) + 20000;
                margin = margin < MIN_MARGIN ? MIN_MARGIN : margin > MAX_MARGIN ? MAX_MARGIN : margin;
            }
        }
        while (now_ns() < next)
            spin_hint();
    }
    printf("{\"count\": %llu, \"p50_us\": %.0f, \"p99_us\": %.0f, \"max_us\": %.0f, "
           "\"over_1ms\": %llu, \"realtime\": %s}\n",
           (unsigned long long)count, quantile(count, 0.5), quantile(count, 0.99), max / 1e3,
           (unsigned long long)over, realtime ? "true" : "false");
    return 0;
}
