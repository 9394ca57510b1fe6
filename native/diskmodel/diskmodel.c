/* nbdkit filter "diskmodel": a disk that seeks, for the lab VM's virtual disks. The disk, its
 * queue and its arithmetic are disk.c; this is nbdkit's side: parameters, callbacks, stats.
 *
 * Why a C filter and not the Python plugin: it runs once per request on the host beside TCG's
 * busy vCPU threads, and the model's cost per MiB/s served is one of the lab's own figures
 * (bench/lab_seek.py); the Python plugin would add an interpreter call and the GIL to each.
 *
 * nbdkit's PARALLEL thread model: one thread per request in flight, each waiting in the disk's
 * queue until it is chosen (the file plugin below is parallel too). nbd.py starts nbdkit with
 * queue depth + 1 threads (the request on the platter and the depth waiting), so the queue
 * depth, not nbdkit's thread count, bounds what the disk chooses among.
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

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#include "diskmodel.h"

int64_t track_ns = -1, full_ns = -1, rpm = -1, rate = -1, slack_ns = 0, queue_depth = 32, max_passes = 32;
FILE *log_file;
struct totals totals;
static char *stats_path, *log_path;
static int64_t stats_written_at;

int64_t
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
  static const struct { const char *key; int64_t *value; } positive[] = {
    { "diskmodel-track-ns", &track_ns }, { "diskmodel-full-ns", &full_ns }, { "diskmodel-rpm", &rpm },
    { "diskmodel-rate", &rate }, { "diskmodel-queue-depth", &queue_depth },
    { "diskmodel-max-passes", &max_passes },
  };
  for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
    if (strcmp (key, positive[i].key) == 0)
      return parse_positive (key, value, positive[i].value);
  if (strcmp (key, "diskmodel-slack-ns") == 0)
    return nbdkit_parse_int64_t (key, value, &slack_ns);
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
  "diskmodel-log=PATH      One line per request, in the order served."

static int
diskmodel_thread_model (void)
{
  return NBDKIT_THREAD_MODEL_PARALLEL;
}

void
write_stats (int64_t now, bool force)
{
  if (!stats_path || (!force && now - stats_written_at < 1000000000))
    return;
  stats_written_at = now;
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
  write_stats (now_ns (), true);
  if (log_file)
    fclose (log_file);
  free (stats_path);
  free (log_path);
}

static int
diskmodel_pread (nbdkit_next *next, void *handle, void *buf, uint32_t count, uint64_t offset,
                 uint32_t flags, int *err)
{
  struct request r;
  disk_enter (&r, 'R', offset, count, next->get_size (next));
  int ret = next->pread (next, buf, count, offset, flags, err);
  disk_leave (&r, ret != -1, &totals.reads, &totals.bytes_read);
  return ret;
}

static int
diskmodel_pwrite (nbdkit_next *next, void *handle, const void *buf, uint32_t count, uint64_t offset,
                  uint32_t flags, int *err)
{
  struct request r;
  disk_enter (&r, 'W', offset, count, next->get_size (next));
  int ret = next->pwrite (next, buf, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
  disk_leave (&r, ret != -1, &totals.writes, &totals.bytes_written);
  return ret;
}

static int
diskmodel_zero (nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  struct request r;
  disk_enter (&r, 'Z', offset, count, next->get_size (next));
  int ret = next->zero (next, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
  disk_leave (&r, ret != -1, &totals.zeroes, &totals.bytes_written);
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
