/* nbdkit filter "diskmodel": a disk that seeks, for the lab VM's virtual disks.
 *
 * One request at a time is on the platter (one head, one arm) and takes
 *   seek(d) + rotation(d) + count / rate
 * where d is the distance in bytes from the end of the previous request to this one's start:
 *   seek(d)     = 0 for d == 0, else track + (full - track) * sqrt(d / capacity)
 *   rotation(d) = 0 for d == 0, else half a revolution, 30 s / rpm
 * A request that starts where the last one ended pays only its transfer, so a sequential stream
 * runs at `rate`. The formula lives in backupbench/lab/diskmodel.py too (the Python reference the
 * tests hold this filter to): both do the same double operations in the same order and truncate
 * each term to whole nanoseconds, so they agree to the nanosecond (built -ffp-contract=off, so no
 * fused multiply-add changes a rounding).
 *
 * Command queueing, as a SATA disk's NCQ: requests come in parallel (nbdkit's PARALLEL thread
 * model, one thread per request in flight: nbd.py starts nbdkit with queue depth + 1 threads, so
 * the filter, not nbdkit, bounds the queue), join a queue in arrival order and wait. When the disk
 * is free it chooses among the first diskmodel-queue-depth waiting the one whose start is nearest
 * the head (ties: the earlier), unless the oldest has been passed over diskmodel-max-passes
 * times, which is then served (a far request cannot starve behind a stream fed next to the head).
 * Serving strictly in arrival order made every request of several parallel streams a seek, which
 * a real disk's reordering avoids. Depth 1 is first come, first served. The choice is made on the
 * model's clock, not on when a thread happens to wake: among what had arrived when the disk became
 * free (or, for an idle disk, when the first request came), so schedule() in the reference, given
 * the arrival times logged here, reproduces the order exactly.
 *
 * Why a C filter and not the Python plugin: it runs once per request on the host beside TCG's
 * busy vCPU threads, and the model's cost per MiB/s served is one of the lab's own figures
 * (bench/lab_seek.py); the Python plugin would add an interpreter call and the GIL to each.
 *
 * The time is a deadline, not a sleep added to the real I/O: the chosen request's service starts
 * when the disk became free (or it came, to an idle disk), the file below is read or written, and
 * the thread sleeps until start + service. So the host's page cache or SSD under the image does not
 * show through; when the host's own read or write takes longer than the model's service, the
 * request is `late` and counted. A request that comes within diskmodel-slack-ns of the previous
 * one's end starts at that end: the gap is nbdkit's own reply and receive path and, at queue depth
 * 1, the emulated guest's round trip (1-2 ms under TCG on a busy host, microseconds on a real one),
 * which a real disk streaming from its read-ahead or a real host's queue would not show. Without it
 * a 512 KiB sequential stream at 200 MB/s measured 65 % of the rate (a Python client on the host),
 * 47-67 % in the lab guest with a 1 ms slack, 84 % with 5 ms. A longer gap is idle time: not
 * absorbed.
 *
 * Writes and zeroes cost what a read of the same size costs (no write cache). Flush is answered
 * at once and not passed down: a write is on the platter when served, and the host's fdatasync of
 * a throwaway image would only put the host's disk into the model's timing. No TRIM: a spinning
 * disk has none. Extents and cache requests are metadata and pass free.
 *
 * Parameters (all required, whole numbers): diskmodel-track-ns, diskmodel-full-ns, diskmodel-rpm,
 * diskmodel-rate (bytes/s). Optional: diskmodel-slack-ns (0 if not given), diskmodel-queue-depth
 * (32), diskmodel-max-passes (32); diskmodel-stats=PATH, totals as key=value lines, rewritten at
 * most once a second (while requests come) and at exit; diskmodel-log=PATH, one line per request
 * in the order served (tests, debugging).
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static int64_t track_ns = -1, full_ns = -1, rpm = -1, rate = -1, slack_ns = 0;
static int64_t queue_depth = 32, max_passes = 32;
static char *stats_path, *log_path;
static FILE *log_file;

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

/* One disk, whatever the connections: the queue, the head (the end of the last request served),
 * when the disk is free, and whether a request is on the platter. All under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct request *queue, **queue_end = &queue;
static uint64_t head, next_seq, waiting;
static int64_t free_at;
static bool platter_busy;

static struct {
  uint64_t requests, reads, writes, zeroes, bytes_read, bytes_written, seeks, late;
  uint64_t reordered, aged, candidates, waiting_max;
  int64_t seek_ns, rotation_ns, transfer_ns, late_ns, io_ns, absorbed_ns, behind_ns, queued_ns;
} totals;
static int64_t stats_written_at;

static int64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
parse_positive (const char *key, const char *value, int64_t *out)
{
  if (nbdkit_parse_int64_t (key, value, out) == -1)
    return -1;
  if (*out <= 0) {
    nbdkit_error ("%s must be more than 0, not %s", key, value);
    return -1;
  }
  return 0;
}

static int
diskmodel_config (nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key, const char *value)
{
  if (strcmp (key, "diskmodel-track-ns") == 0)
    return parse_positive (key, value, &track_ns);
  if (strcmp (key, "diskmodel-full-ns") == 0)
    return parse_positive (key, value, &full_ns);
  if (strcmp (key, "diskmodel-rpm") == 0)
    return parse_positive (key, value, &rpm);
  if (strcmp (key, "diskmodel-rate") == 0)
    return parse_positive (key, value, &rate);
  if (strcmp (key, "diskmodel-slack-ns") == 0)
    return nbdkit_parse_int64_t (key, value, &slack_ns);
  if (strcmp (key, "diskmodel-queue-depth") == 0)
    return parse_positive (key, value, &queue_depth);
  if (strcmp (key, "diskmodel-max-passes") == 0)
    return parse_positive (key, value, &max_passes);
  if (strcmp (key, "diskmodel-stats") == 0) {
    free (stats_path);
    return (stats_path = nbdkit_absolute_path (value)) ? 0 : -1;
  }
  if (strcmp (key, "diskmodel-log") == 0) {
    free (log_path);
    return (log_path = nbdkit_absolute_path (value)) ? 0 : -1;
  }
  return next (nxdata, key, value);
}

static int
diskmodel_config_complete (nbdkit_next_config_complete *next, nbdkit_backend *nxdata)
{
  if (track_ns < 0 || full_ns < 0 || rpm < 0 || rate < 0) {
    nbdkit_error ("diskmodel needs diskmodel-track-ns, diskmodel-full-ns, diskmodel-rpm and diskmodel-rate");
    return -1;
  }
  if (full_ns < track_ns) {
    nbdkit_error ("diskmodel-full-ns (%" PRIi64 ") is below diskmodel-track-ns (%" PRIi64 ")", full_ns, track_ns);
    return -1;
  }
  if (log_path) {
    log_file = fopen (log_path, "w");
    if (!log_file) {
      nbdkit_error ("diskmodel-log %s: %m", log_path);
      return -1;
    }
  }
  return next (nxdata);
}

#define diskmodel_config_help \
  "diskmodel-track-ns=NS   Seek time of the shortest move (track to track).\n" \
  "diskmodel-full-ns=NS    Seek time across the whole disk.\n" \
  "diskmodel-rpm=N         Spindle speed: a move waits half a revolution.\n" \
  "diskmodel-rate=BYTES    Transfer rate, bytes per second.\n" \
  "diskmodel-slack-ns=NS   A gap this short after the last request is not idle time.\n" \
  "diskmodel-queue-depth=N Choose among this many waiting requests (1: in order).\n" \
  "diskmodel-max-passes=N  Serve the oldest once this many were served before it.\n" \
  "diskmodel-stats=PATH    Totals, rewritten once a second and at exit.\n" \
  "diskmodel-log=PATH      One line per request."

static int
diskmodel_thread_model (void)
{
  return THREAD_MODEL;
}

static void
write_stats (void)
{
  if (!stats_path)
    return;
  size_t len = strlen (stats_path) + 5;
  char tmp[len];
  snprintf (tmp, len, "%s.tmp", stats_path);
  FILE *fp = fopen (tmp, "w");
  if (!fp) {
    nbdkit_debug ("diskmodel: cannot write %s: %m", tmp);
    return;
  }
  fprintf (fp,
           "requests=%" PRIu64 "\nreads=%" PRIu64 "\nwrites=%" PRIu64 "\nzeroes=%" PRIu64 "\n"
           "bytes_read=%" PRIu64 "\nbytes_written=%" PRIu64 "\nseeks=%" PRIu64 "\n"
           "seek_ns=%" PRIi64 "\nrotation_ns=%" PRIi64 "\ntransfer_ns=%" PRIi64 "\n"
           "io_ns=%" PRIi64 "\nlate=%" PRIu64 "\nlate_ns=%" PRIi64 "\nabsorbed_ns=%" PRIi64 "\n"
           "behind_ns=%" PRIi64 "\nqueued_ns=%" PRIi64 "\nreordered=%" PRIu64 "\naged=%" PRIu64 "\n"
           "candidates=%" PRIu64 "\nwaiting_max=%" PRIu64 "\nqueue_depth=%" PRIi64 "\n",
           totals.requests, totals.reads, totals.writes, totals.zeroes, totals.bytes_read,
           totals.bytes_written, totals.seeks, totals.seek_ns, totals.rotation_ns,
           totals.transfer_ns, totals.io_ns, totals.late, totals.late_ns, totals.absorbed_ns,
           totals.behind_ns, totals.queued_ns, totals.reordered, totals.aged, totals.candidates,
           totals.waiting_max, queue_depth);
  if (fclose (fp) == 0)
    rename (tmp, stats_path);
}

static void
diskmodel_unload (void)
{
  write_stats ();
  if (log_file)
    fclose (log_file);
  free (stats_path);
  free (log_path);
}

/* The service time of one request from the head, its three terms truncated to whole
 * nanoseconds. */
static struct service
model (uint64_t offset, uint32_t count, uint64_t capacity)
{
  struct service s = { .distance = offset > head ? offset - head : head - offset };
  if (s.distance != 0 && capacity > 0) {
    double fraction = (double) s.distance / (double) capacity;
    s.seek = (int64_t) ((double) track_ns + (double) (full_ns - track_ns) * sqrt (fraction));
    s.rotation = (int64_t) (30e9 / (double) rpm);
  }
  s.transfer = (int64_t) ((double) count * 1e9 / (double) rate);
  return s;
}

static uint64_t
distance_to (const struct request *r)
{
  return r->offset > head ? r->offset - head : head - r->offset;
}

/* With `lock` held: if the disk is free and someone waits, choose who goes on the platter (see
 * the top), charge it from the head, move the head and wake its thread. */
static void
dispatch (void)
{
  if (platter_busy || !queue)
    return;
  int64_t decided = queue->arrival > free_at ? queue->arrival : free_at;
  bool aged = queue->passes >= max_passes;
  struct request **link, **chosen_link = &queue;
  int64_t candidates = 0;
  for (link = &queue; *link && candidates < queue_depth && (*link)->arrival <= decided; link = &(*link)->next) {
    candidates++;
    if (!aged && distance_to (*link) < distance_to (*chosen_link))
      chosen_link = link;
  }
  struct request *r = *chosen_link;
  for (struct request *older = queue; older != r; older = older->next)
    older->passes++;
  *chosen_link = r->next;
  if (queue_end == &r->next)
    queue_end = chosen_link;
  waiting--;

  r->start = decided;
  if (free_at > 0 && decided - free_at <= slack_ns) {
    totals.absorbed_ns += decided - free_at;
    r->start = free_at;
  }
  r->s = model (r->offset, r->count, r->capacity);
  r->candidates = candidates;
  r->aged = aged;
  totals.reordered += chosen_link != &queue;
  totals.aged += aged;
  totals.candidates += candidates;
  totals.queued_ns += r->start > r->arrival ? r->start - r->arrival : 0;
  head = r->offset + r->count;
  platter_busy = true;
  r->chosen = true;
  pthread_cond_signal (&r->chosen_cond);
}

/* A request arrives: it joins the queue and waits until the disk chooses it. */
static void
enter (struct request *r, char op, uint64_t offset, uint32_t count, uint64_t capacity)
{
  *r = (struct request) { .op = op, .offset = offset, .count = count, .capacity = capacity };
  pthread_cond_init (&r->chosen_cond, NULL);
  pthread_mutex_lock (&lock);
  /* Read under the lock, so the queue's order is the arrival times' order and whatever arrived
   * before a decision's time is in the queue when it is made. */
  r->arrival = now_ns ();
  r->seq = next_seq++;
  *queue_end = r;
  queue_end = &r->next;
  if (++waiting > totals.waiting_max)
    totals.waiting_max = waiting;
  dispatch ();
  while (!r->chosen)
    pthread_cond_wait (&r->chosen_cond, &lock);
  pthread_mutex_unlock (&lock);
  r->io_begin = now_ns ();
}

/* The chosen request's real I/O just ended: wait until the model says it is done, then free the
 * disk for the next. `late`: the host's own read or write took longer than the model's whole
 * service time (the host, not the model, set that request's pace). `behind`: the request ended
 * after its deadline (late, or chosen after its deadline had passed: the emulator or the host's
 * scheduler, not the disk, set the pace); the disk is free only then. */
static void
leave (struct request *r, bool done, uint64_t *ops, uint64_t *bytes)
{
  int64_t io_end = now_ns ();
  int64_t service = r->s.seek + r->s.rotation + r->s.transfer;
  int64_t deadline = r->start + service;
  int64_t behind_ns = io_end > deadline ? io_end - deadline : 0;
  if (!behind_ns) {
    struct timespec until = { .tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000 };
    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
      ;
  }

  pthread_mutex_lock (&lock);
  if (done) {
    (*ops)++;
    *bytes += r->count;
  }
  totals.requests++;
  totals.seeks += r->s.distance != 0;
  totals.seek_ns += r->s.seek;
  totals.rotation_ns += r->s.rotation;
  totals.transfer_ns += r->s.transfer;
  totals.io_ns += io_end - r->io_begin;
  totals.behind_ns += behind_ns;
  if (io_end - r->io_begin > service) {
    totals.late++;
    totals.late_ns += io_end - r->io_begin - service;
  }
  if (log_file)
    fprintf (log_file, "%c %" PRIu64 " %" PRIi64 " %" PRIi64 " %" PRIu64 " %" PRIu32 " %" PRIu64 " %" PRIi64
             " %" PRIi64 " %" PRIi64 " %" PRIi64 " %" PRIi64 " %d\n",
             r->op, r->seq, r->arrival, r->start, r->offset, r->count, r->s.distance, r->s.seek,
             r->s.rotation, r->s.transfer, behind_ns, r->candidates, r->aged);
  free_at = deadline + behind_ns;
  platter_busy = false;
  dispatch ();
  if (stats_path && io_end - stats_written_at >= 1000000000) {
    stats_written_at = io_end;
    write_stats ();
  }
  pthread_mutex_unlock (&lock);
  pthread_cond_destroy (&r->chosen_cond);
}

static int
diskmodel_pread (nbdkit_next *next, void *handle, void *buf, uint32_t count, uint64_t offset,
                 uint32_t flags, int *err)
{
  struct request r;
  enter (&r, 'R', offset, count, next->get_size (next));
  int ret = next->pread (next, buf, count, offset, flags, err);
  leave (&r, ret != -1, &totals.reads, &totals.bytes_read);
  return ret;
}

static int
diskmodel_pwrite (nbdkit_next *next, void *handle, const void *buf, uint32_t count, uint64_t offset,
                  uint32_t flags, int *err)
{
  struct request r;
  enter (&r, 'W', offset, count, next->get_size (next));
  int ret = next->pwrite (next, buf, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
  leave (&r, ret != -1, &totals.writes, &totals.bytes_written);
  return ret;
}

static int
diskmodel_zero (nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  struct request r;
  enter (&r, 'Z', offset, count, next->get_size (next));
  int ret = next->zero (next, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
  leave (&r, ret != -1, &totals.zeroes, &totals.bytes_written);
  return ret;
}

static int
diskmodel_flush (nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
  return 0;
}

static int
diskmodel_can_flush (nbdkit_next *next, void *handle)
{
  return 1;
}

static int
diskmodel_can_fua (nbdkit_next *next, void *handle)
{
  return NBDKIT_FUA_NATIVE;
}

static int
diskmodel_can_trim (nbdkit_next *next, void *handle)
{
  return 0;
}

static int
diskmodel_can_fast_zero (nbdkit_next *next, void *handle)
{
  return 0;
}

static int
diskmodel_is_rotational (nbdkit_next *next, void *handle)
{
  return 1;
}

static struct nbdkit_filter filter = {
  .name = "diskmodel",
  .longname = "backupbench's seeking disk model",
  .unload = diskmodel_unload,
  .config = diskmodel_config,
  .config_complete = diskmodel_config_complete,
  .config_help = diskmodel_config_help,
  .thread_model = diskmodel_thread_model,
  .can_flush = diskmodel_can_flush,
  .can_fua = diskmodel_can_fua,
  .can_trim = diskmodel_can_trim,
  .can_fast_zero = diskmodel_can_fast_zero,
  .is_rotational = diskmodel_is_rotational,
  .pread = diskmodel_pread,
  .pwrite = diskmodel_pwrite,
  .zero = diskmodel_zero,
  .flush = diskmodel_flush,
};

NBDKIT_REGISTER_FILTER (filter)
