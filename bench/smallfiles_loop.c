/* Reference loop for bench/smallfiles.py: the small-file workload in plain C.
 *
 * Same work as backupbench's smallfiles engine with flush "none": in ROOT, N files of
 * SIZE bytes spread over FOLDERS folders (file i in d%04d/f%06d, folder i % FOLDERS),
 * THREADS pthreads each taking one contiguous chunk of files. Phase "create" writes
 * the folders, then every file with byte 0x00 (O_CREAT|O_EXCL, write); phase "update-1"
 * rewrites every file in place with 0xff (no O_TRUNC, pwrite at offset 0). Each file's
 * open+write+close is timed, as the engine does.
 *
 * Usage: smallfiles_loop ROOT FILES SIZE FOLDERS THREADS
 * Prints one line per phase: "<phase> <seconds> <files>". Exit 1 on any error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long files, size, folders, threads;
static int fw, dw; /* digits in file and folder names */
static unsigned char *buf_create, *buf_update;
static int64_t *latency;

struct chunk { long start, end; int update; int err; };

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int digits(long n) {
    int d = 1;
    while (n >= 10) { n /= 10; d++; }
    return d;
}

static void *worker(void *arg) {
    struct chunk *c = arg;
    char path[64];
    const unsigned char *buf = c->update ? buf_update : buf_create;
    int flags = c->update ? (O_WRONLY | O_CLOEXEC) : (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
    for (long i = c->start; i < c->end; i++) {
        snprintf(path, sizeof path, "d%0*ld/f%0*ld", dw, i % folders, fw, i);
        int64_t t0 = now_ns();
        int fd = open(path, flags, 0644);
        if (fd < 0) { c->err = errno; return NULL; }
        long done = 0;
        while (done < size) {
            ssize_t n = c->update || done ? pwrite(fd, buf + done, size - done, done)
                                          : write(fd, buf, size);
            if (n < 0) { c->err = errno; close(fd); return NULL; }
            done += n;
        }
        if (close(fd) < 0) { c->err = errno; return NULL; }
        latency[i] = now_ns() - t0;
    }
    return NULL;
}

static int phase(const char *name, int update) {
    pthread_t tid[256];
    struct chunk ch[256];
    int64_t t0 = now_ns();
    if (!update) {
        char path[32];
        for (long d = 0; d < folders; d++) {
            snprintf(path, sizeof path, "d%0*ld", dw, d);
            if (mkdir(path, 0755) != 0) { perror(path); return 1; }
        }
    }
    for (long t = 0; t < threads; t++) {
        ch[t].start = files * t / threads;
        ch[t].end = files * (t + 1) / threads;
        ch[t].update = update;
        ch[t].err = 0;
        if (pthread_create(&tid[t], NULL, worker, &ch[t]) != 0) { perror("pthread_create"); return 1; }
    }
    int err = 0;
    for (long t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        if (ch[t].err) err = ch[t].err;
    }
    double seconds = (now_ns() - t0) / 1e9;
    if (err) { fprintf(stderr, "%s: %s\n", name, strerror(err)); return 1; }
    printf("%s %.6f %ld\n", name, seconds, files);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s ROOT FILES SIZE FOLDERS THREADS\n", argv[0]);
        return 2;
    }
    files = atol(argv[2]); size = atol(argv[3]); folders = atol(argv[4]); threads = atol(argv[5]);
    if (files < 1 || size < 1 || folders < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    if (threads > files) threads = files;
    fw = digits(files - 1); if (fw < 6) fw = 6;
    dw = digits(folders - 1); if (dw < 4) dw = 4;
    if (chdir(argv[1]) != 0) { perror(argv[1]); return 1; }
    buf_create = malloc(size); buf_update = malloc(size);
    latency = calloc(files, sizeof *latency);
    if (!buf_create || !buf_update || !latency) { perror("malloc"); return 1; }
    memset(buf_create, 0x00, size);
    memset(buf_update, 0xff, size);
    if (phase("create", 0)) return 1;
    if (phase("update-1", 1)) return 1;
    return 0;
}
