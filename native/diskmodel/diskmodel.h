/* What the filter's two halves share: diskmodel.c (nbdkit's side: parameters, callbacks, the
 * stats file) and disk.c (the arm and the queue). See disk.c for the model. */

#ifndef DISKMODEL_H
#define DISKMODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The parameters, set once before any request (diskmodel.c). */
extern int64_t track_ns, full_ns, rpm, rate, slack_ns, queue_depth, max_passes;
extern FILE *log_file;

/* What serving one request costs: how far the head moves and the three terms, in ns. */
struct service { uint64_t distance; int64_t seek, rotation, transfer; };

/* A request from its arrival until the disk has served it; lives on its thread's stack. */
struct request {
  struct request *next;         /* the queue, in arrival order */
  char op;
  uint64_t seq, offset, capacity;
  uint32_t count;
  int64_t arrival, passes;
  pthread_cond_t chosen_cond;
  bool chosen, aged;
  /* set when chosen */
  int64_t start, io_begin, candidates;
  struct service s;
};

/* Totals since the start, written to the stats file; under the disk's lock. */
extern struct totals {
  uint64_t requests, reads, writes, zeroes, bytes_read, bytes_written, seeks, late;
  uint64_t reordered, aged, candidates, waiting_max;
  int64_t seek_ns, rotation_ns, transfer_ns, late_ns, io_ns, absorbed_ns, behind_ns, queued_ns;
} totals;

int64_t now_ns (void);
/* Rewrites the stats file if a second has passed since the last time (`force`: at once). */
void write_stats (int64_t now, bool force);

/* The request waits in the queue until the disk chooses it; then its real I/O may run. */
void disk_enter (struct request *r, char op, uint64_t offset, uint32_t count, uint64_t capacity);
/* Its real I/O has ended (`done`: without error, counted in *ops and *bytes): it waits for its
 * deadline and frees the disk. */
void disk_leave (struct request *r, bool done, uint64_t *ops, uint64_t *bytes);

#endif
