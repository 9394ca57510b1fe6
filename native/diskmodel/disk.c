/* The disk itself: one arm, a queue, and what each request costs.
 *
 * One request at a time is on the platter and takes
 *   seek(d) + rotation(d) + count / rate
 * where d is the distance in bytes from the end of the previous request to this one's start:
 *   seek(d)     = 0 for d == 0, else track + (full - track) * sqrt(d / capacity)
 *   rotation(d) = 0 for d == 0, else half a revolution, 30 s / rpm
 * A request that starts where the last one ended pays only its transfer, so a sequential stream
 * runs at `rate`. The formula and the queue live in backupbench/lab/diskmodel.py too (the Python
 * reference the tests hold this filter to): both do the same double operations in the same order
 * and truncate each term to whole nanoseconds, so they agree to the nanosecond (built
 * -ffp-contract=off, so no fused multiply-add changes a rounding).
 *
 * Command queueing, as a SATA disk's NCQ. Requests come in parallel (one nbdkit thread each) and
 * wait in a queue in arrival order. When the disk is free it chooses among the first queue_depth
 * waiting by an elevator's sweep (C-LOOK): the lowest start at or past the head, else the lowest
 * of all (the sweep starts again); ties by arrival. Serving strictly in arrival order made every
 * request of several parallel streams a seek, which a real disk's reordering avoids. Not the
 * nearest start: the head meets a stream's queued requests from above as often as from below, and
 * nearest-first walked them backwards, each a short seek and half a revolution (measured in the
 * lab: field note A's linear LV at 4 jobs x 16 fell to 38.5-39.4 MiB/s of 50; the sweep serves it
 * at 48-50). A stream fed just ahead of the head would hold the sweep forever, so once the oldest
 * waiting request has been passed over max_passes times it is served next. Depth 1 is first come,
 * first served.
 *
 * The choice is made on the model's clock, not when a thread happens to wake: among what had
 * arrived when the disk became free (or, to an idle disk, when the first request came). Arrival
 * times are read under the lock, so whatever arrived by then is in the queue when the choice is
 * made, however late the releasing thread runs; schedule() in the reference, given the arrival
 * times and `behind` logged here, gives the same order and start times.
 *
 * The time is a deadline, not a sleep added to the real I/O: the chosen request's service starts
 * when the disk became free (or when it came to an idle disk), the file below is read or written,
 * and the thread sleeps until start + service. So the host's page cache or SSD under the image does
 * not show through; when the host's own read or write takes longer than the model's service, the
 * request is `late` and counted. A request that comes within slack_ns of the previous one's end
 * starts at that end: the gap is nbdkit's own reply and receive path and, at queue depth 1, the
 * emulated guest's round trip (1-2 ms under TCG on a busy host, microseconds on a real one), which
 * a real disk streaming from its read-ahead or a real host's queue would not show. Without it a
 * 512 KiB sequential stream at 200 MB/s measured 65 % of the rate (a Python client on the host),
 * 47-67 % in the lab guest with a 1 ms slack, 84 % with 5 ms. A longer gap is idle time.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <time.h>

#include "diskmodel.h"

/* One disk, whatever the connections: the queue, the head (the end of the last request chosen),
 * when the disk is free, and whether a request is on the platter. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct request *queue, **queue_end = &queue;
static uint64_t head, next_seq, waiting;
static int64_t free_at;
static bool platter_busy;

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

/* The sweep's order: a request at or past the head before one behind it, then the lower start. */
static bool
sooner (const struct request *a, const struct request *b)
{
  bool a_ahead = a->offset >= head, b_ahead = b->offset >= head;
  return a_ahead != b_ahead ? a_ahead : a->offset < b->offset;
}

/* The candidate the disk serves next, unlinked from the queue; *candidates: how many it was
 * chosen among. Every older candidate is passed over once more. */
static struct request *
choose (int64_t decided, int64_t *candidates, bool *aged)
{
  struct request **link, **chosen_link = &queue;
  *aged = queue->passes >= max_passes;
  *candidates = 0;
  for (link = &queue; *link && *candidates < queue_depth && (*link)->arrival <= decided; link = &(*link)->next) {
    ++*candidates;
    if (!*aged && sooner (*link, *chosen_link))
      chosen_link = link;
  }
  struct request *r = *chosen_link;
  totals.reordered += r != queue;
  for (struct request *older = queue; older != r; older = older->next)
    older->passes++;
  *chosen_link = r->next;
  if (queue_end == &r->next)
    queue_end = chosen_link;
  waiting--;
  return r;
}

/* With `lock` held: if the disk is free and someone waits, put the chosen one on the platter,
 * charge it from the head, move the head and wake its thread. */
static void
dispatch (void)
{
  if (platter_busy || !queue)
    return;
  int64_t decided = queue->arrival > free_at ? queue->arrival : free_at;
  int64_t candidates;
  bool aged;
  struct request *r = choose (decided, &candidates, &aged);
  r->start = decided;
  if (free_at > 0 && decided - free_at <= slack_ns) {
    totals.absorbed_ns += decided - free_at;
    r->start = free_at;
  }
  r->s = model (r->offset, r->count, r->capacity);
  r->candidates = candidates;
  r->aged = aged;
  totals.aged += aged;
  totals.candidates += candidates;
  totals.queued_ns += r->start > r->arrival ? r->start - r->arrival : 0;
  head = r->offset + r->count;
  platter_busy = true;
  r->chosen = true;
  pthread_cond_signal (&r->chosen_cond);
}

void
disk_enter (struct request *r, char op, uint64_t offset, uint32_t count, uint64_t capacity)
{
  *r = (struct request) { .op = op, .offset = offset, .count = count, .capacity = capacity };
  pthread_cond_init (&r->chosen_cond, NULL);
  pthread_mutex_lock (&lock);
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

/* `late`: the host's own read or write took longer than the model's whole service time (the
 * host, not the model, set that request's pace). `behind`: the request ended after its deadline
 * (late, or chosen after its deadline had passed: the emulator or the host's scheduler, not the
 * disk, set the pace); the disk is free only then. */
static void
account (const struct request *r, int64_t io_end, int64_t service, int64_t behind_ns)
{
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
}

void
disk_leave (struct request *r, bool done, uint64_t *ops, uint64_t *bytes)
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
  account (r, io_end, service, behind_ns);
  free_at = deadline + behind_ns;
  platter_busy = false;
  dispatch ();
  write_stats (io_end, false);
  pthread_mutex_unlock (&lock);
  pthread_cond_destroy (&r->chosen_cond);
}
